import CSQLite

/// libsqlite3, opened when the first connection opens rather than linked: a `baton` that only
/// asks batond never maps it (its start is shorter by the library's loading and relocation).
enum SQLite {
    /// The library's name, as Debian's libsqlite3-0 installs it.
    static let library = "libsqlite3.so.0"

    /// Opened on first use (a global's lazy initialiser runs once), then only read.
    private static let opened: Result<BatonSQLite, DatabaseError> = open(library)

    /// libsqlite3's functions, or why the library cannot be loaded (an error naming it and its package).
    static func load() throws(DatabaseError) -> BatonSQLite {
        try opened.get()
    }

    /// The functions, once a connection has opened (so the library is loaded); nil before.
    static var loaded: BatonSQLite? { try? opened.get() }

    /// A C string SQLite returned (its messages, a text column), or "" for the NULL it returns when out of memory.
    static func text<C>(_ pointer: UnsafePointer<C>?) -> String {
        pointer.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) } ?? ""
    }

    private static func open(_ library: String) -> Result<BatonSQLite, DatabaseError> {
        let table = UnsafeMutablePointer<BatonSQLite>.allocate(capacity: 1)
        defer { table.deallocate() }
        var error = [CChar](repeating: 0, count: 512)
        guard baton_sqlite_open(library, table, &error, error.count) == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(DatabaseError(code: SQLITE_CANTOPEN, message: "SQLite's library \(library) cannot be loaded: \(reason) (Debian's package libsqlite3-0 installs it)"))
        }
        return .success(table.pointee)
    }
}
