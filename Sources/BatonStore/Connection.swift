import CSQLite

/// One SQLite connection, held by one owner (a thread or a serial queue) and never shared.
///
/// Statements from `prepare` live for one call; `cached` statements live as long as the
/// connection and are reset after each use. `deinit` finalizes them all and closes the handle.
public final class Connection {
    let handle: OpaquePointer
    /// libsqlite3's functions (the library is opened by the first connection).
    let sqlite: BatonSQLite
    public let path: String
    /// Cached statements by the address of their SQL literal: no hashing of the text per use.
    private var cache: [UnsafeRawPointer: Statement] = [:]

    /// Opens (or, unless `readOnly`, creates) the database at `path`, waiting up to 5 s for locks.
    public init(path: String, readOnly: Bool = false) throws(DatabaseError) {
        let sqlite = try SQLite.load()
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite.sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { SQLite.text(sqlite.sqlite3_errmsg($0)) } ?? SQLite.text(sqlite.sqlite3_errstr(rc))
            if let db { sqlite.sqlite3_close_v2(db) }
            throw DatabaseError(code: rc, message: message)
        }
        handle = db
        self.sqlite = sqlite
        self.path = path
        sqlite.sqlite3_extended_result_codes(db, 1)
        // Wait for locks rather than fail at once; owners that need another timeout set their own.
        sqlite.sqlite3_busy_timeout(db, 5_000)
    }

    deinit {
        cache.removeAll()
        sqlite.sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(DatabaseError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite.sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? SQLite.text(sqlite.sqlite3_errmsg(handle))
            sqlite.sqlite3_free(errorMessage)
            throw DatabaseError(code: sqlite.sqlite3_extended_errcode(handle), message: message, sql: sql)
        }
    }

    /// Prepares a statement that lives for the duration of `body`.
    public func withStatement<T>(_ sql: String, _ body: (Statement) throws -> T) throws -> T {
        let statement = try Statement(connection: self, sql: sql)
        return try body(statement)
    }

    /// A statement prepared once per connection and reset after `body`. The SQL is a literal, so
    /// its address identifies it.
    public func cached<T>(_ sql: StaticString, _ body: (Statement) throws -> T) throws -> T {
        let key = UnsafeRawPointer(sql.utf8Start)
        let statement: Statement
        if let existing = cache[key] {
            statement = existing
        } else {
            statement = try Statement(connection: self, sql: sql.description)
            cache[key] = statement
        }
        defer { statement.reset() }
        return try body(statement)
    }

    /// How many statements are prepared and kept (`cached`).
    var cachedStatements: Int { cache.count }

    /// Runs `body` in a transaction (IMMEDIATE takes the write lock at once); rolls back if it throws.
    /// BEGIN and COMMIT are prepared once, like the writer's other statements.
    public func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
        if immediate { try cached("BEGIN IMMEDIATE") { try $0.run([]) } } else { try cached("BEGIN") { try $0.run([]) } }
        do {
            let value = try body()
            try cached("COMMIT") { try $0.run([]) }
            return value
        } catch {
            if sqlite.sqlite3_get_autocommit(handle) == 0 { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The rows changed by the last statement.
    public var changes: Int { Int(sqlite.sqlite3_changes(handle)) }

    /// The first column of the first row of a query, or nil.
    public func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue? {
        try withStatement(sql) { statement in
            try statement.bind(arguments)
            return try statement.step() ? statement.value(0) : nil
        }
    }

    func error(sql: String?) -> DatabaseError {
        DatabaseError(code: sqlite.sqlite3_extended_errcode(handle), message: SQLite.text(sqlite.sqlite3_errmsg(handle)), sql: sql)
    }
}
