import CSQLite

/// A failed SQLite call: the result code, SQLite's message, and the SQL that failed.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`).
    public var code: Int32
    public var message: String
    public var sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (SQLITE_BUSY, SQLITE_FULL, …).
    public var primaryCode: Int32 { code & 0xff }

    /// Another connection holds a lock longer than the busy timeout.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// The disk or the database's page limit is full.
    public var isFull: Bool { primaryCode == SQLITE_FULL }

    public var description: String {
        // The library's name for the code, once it is loaded (an error loading it has none).
        let name = SQLite.loaded.map { SQLite.text($0.sqlite3_errstr(code)) } ?? "code \(code & 0xff)"
        var text = "SQLite error \(code) (\(name)): \(message)"
        if let sql { text += " — in: \(sql.prefix(200))" }
        return text
    }
}

/// Why the store could not open or write the history.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// The file cannot be opened or read as a database.
    case cannotOpen(path: String, DatabaseError)
    /// The file (or its journal, or its directory) cannot be written.
    case readOnly(path: String, String)
    /// The file is a database, but not Baton's history.
    case notBatonDatabase(path: String)
    /// The file was migrated by a newer Baton; nothing was changed in it.
    case schemaTooNew(path: String, found: Int, supported: Int)
    /// The database failed its integrity check.
    case corrupt(path: String, String)
    /// Any other SQLite failure.
    case database(DatabaseError)

    public var description: String {
        switch self {
        case let .cannotOpen(path, error):
            "cannot open the history database \(path): \(error.message)"
        case let .readOnly(path, reasons):
            "the history database \(path) cannot be written (\(reasons)); batond needs to write it: check its mode, owner, "
                + "the mount, and `lsattr` for the immutable flag"
        case let .notBatonDatabase(path):
            "\(path) is a SQLite database but not a Baton history (it has tables and no schema_migrations); nothing was changed"
        case let .schemaTooNew(path, found, supported):
            "\(path) has schema version \(found), newer than this Baton supports (\(supported)); upgrade Baton. Nothing was changed"
        case let .corrupt(path, detail):
            "the history database \(path) is corrupt: \(detail). Nothing was overwritten; restore it from a backup or move it away"
        case let .database(error):
            error.description
        }
    }
}
