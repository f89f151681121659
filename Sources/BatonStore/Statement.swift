import CSQLite

/// A value SQLite stores or returns.
public enum DatabaseValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var int64: Int64? { if case let .integer(value) = self { value } else { nil } }
    public var string: String? { if case let .text(value) = self { value } else { nil } }
    public var double: Double? {
        switch self {
        case let .real(value): value
        case let .integer(value): Double(value)
        default: nil
        }
    }
}

/// A prepared statement; finalized when it is released.
public final class Statement {
    let handle: OpaquePointer
    unowned let connection: Connection
    /// libsqlite3's functions, as the connection has them.
    let sqlite: BatonSQLite
    public let sql: String
    /// How many parameters the SQL has: `execute` binds every one of them.
    let parameterCount: Int32
    /// What the parameters hold since the last `reset`: `reset` clears them only when some may
    /// have been left bound by a call that does not bind them all (issue 39: `sqlite3_clear_bindings`
    /// after each of the writer's statements, whose every parameter is bound again, was 6,200
    /// instructions a run).
    var bindings = Bindings.cleared
    /// The text `execute` binds, copied here and read in place by SQLite (`SQLITE_STATIC`): no
    /// copy of SQLite's own, no allocation per value. Valid until the next `execute` starts
    /// (it outlives every step that reads it); text that does not fit is bound as a copy.
    var texts: TextBuffer
    /// Whether the statement has not stepped since SQLite last reset it: `execute` and `run` reset
    /// it as they finish, so `reset` (a `cached` use's end) need not again (issue 39: two
    /// `sqlite3_reset` a use). A step that throws leaves it false, and `reset` resets then.
    var isReset = true

    init(connection: Connection, sql: String) throws(DatabaseError) {
        var statement: OpaquePointer?
        let rc = connection.sqlite.sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw connection.error(sql: sql) }
        handle = statement
        sqlite = connection.sqlite
        self.connection = connection
        self.sql = sql
        parameterCount = sqlite.sqlite3_bind_parameter_count(statement)
        texts = TextBuffer()
    }

    /// `texts` is freed after this, with the statement's other properties.
    deinit { sqlite.sqlite3_finalize(handle) }

    /// Binds values to the parameters, in order, from 1.
    public func bind(_ values: [DatabaseValue]) throws(DatabaseError) {
        if bindings == .all {
            sqlite.sqlite3_clear_bindings(handle)
            bindings = .cleared
        }
        for (index, value) in values.enumerated() { try bind(value, at: Int32(index + 1)) }
    }

    /// Binds one value; the parameters not bound again keep their values until `reset`, which
    /// clears them.
    public func bind(_ value: DatabaseValue, at index: Int32) throws(DatabaseError) {
        // `execute` left every parameter bound (and its text in `texts`): cleared first, so that a
        // parameter this use does not bind is NULL, as after any `reset`.
        if bindings == .all { sqlite.sqlite3_clear_bindings(handle) }
        bindings = .some
        try bindValue(value, at: index)
    }

    /// Binds one value, whoever binds the others (`bind`, or `execute` binding them all).
    func bindValue(_ value: DatabaseValue, at index: Int32) throws(DatabaseError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite.sqlite3_bind_null(handle, index)
        case let .integer(v): rc = sqlite.sqlite3_bind_int64(handle, index, v)
        case let .real(v): rc = sqlite.sqlite3_bind_double(handle, index, v)
        case var .text(v): rc = v.withUTF8 { bindCopy($0, at: index) }
        case let .blob(v):
            rc = v.withUnsafeBytes { sqlite.sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(v.count), SQLITE_TRANSIENT) }
        }
        guard rc == SQLITE_OK else { throw connection.error(sql: sql) }
    }

    /// Advances to the next row; false when there is none.
    public func step() throws(DatabaseError) -> Bool {
        isReset = false
        switch sqlite.sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(sql: sql)
        }
    }

    /// Runs a statement that returns no rows.
    public func run(_ values: [DatabaseValue]) throws(DatabaseError) {
        try bind(values)
        _ = try step()
        sqlite.sqlite3_reset(handle)
        isReset = true
    }

    /// Resets the statement for its next use, and clears its parameters unless `execute` bound them
    /// all (it binds every one again before its next step).
    public func reset() {
        if !isReset {
            sqlite.sqlite3_reset(handle)
            isReset = true
        }
        if bindings == .some {
            sqlite.sqlite3_clear_bindings(handle)
            bindings = .cleared
        }
    }

    public var columnCount: Int32 { sqlite.sqlite3_column_count(handle) }

    public func value(_ column: Int32) -> DatabaseValue {
        switch sqlite.sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(sqlite.sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite.sqlite3_column_double(handle, column))
        case SQLITE_TEXT: return .text(SQLite.text(sqlite.sqlite3_column_text(handle, column)))
        case SQLITE_BLOB:
            let count = Int(sqlite.sqlite3_column_bytes(handle, column))
            guard count > 0, let bytes = sqlite.sqlite3_column_blob(handle, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    public func int64(_ column: Int32) -> Int64? {
        sqlite.sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite.sqlite3_column_int64(handle, column)
    }

    public func string(_ column: Int32) -> String? {
        guard let text = sqlite.sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }

    public func double(_ column: Int32) -> Double? {
        sqlite.sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite.sqlite3_column_double(handle, column)
    }
}

/// SQLITE_TRANSIENT: SQLite copies the bound bytes before the call returns.
let SQLITE_TRANSIENT = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
