import BatonCore

/// Brings a database to the schema this binary knows, from the SQL embedded at build time.
///
/// Each migration runs in one IMMEDIATE transaction together with the row that records it, so a
/// crash leaves the database at one version or the next. A database from a newer Baton, or one
/// that is not Baton's, is refused before anything is written.
public enum Migrator {
    /// A schema step: version, name and SQL from `Migrations/NNNN_name.sql`, and the rows some
    /// versions rewrite in code after their SQL, in the same transaction.
    public struct Migration: Sendable {
        public var version: Int
        public var name: String
        public var sql: String
        /// Rewrites rows where SQL cannot (see the version's file); nil for most versions. Returns
        /// what it left undone and why (for the log), or nil.
        public var rewrite: (@Sendable (Connection) throws -> String?)? = nil
    }

    /// Every migration this binary carries, in version order.
    public static let migrations: [Migration] = embeddedMigrations.map {
        Migration(version: $0.version, name: $0.name, sql: $0.sql, rewrite: rewrites[$0.version])
    }

    /// The versions whose rows are rewritten in code, by version. Like the SQL files, never
    /// changed once landed.
    static let rewrites: [Int: @Sendable (Connection) throws -> String?] = [
        2: { try StoredKeys.rewrite($0); return nil },
        17: { try PhaseCheck.rewrite($0) },
    ]

    /// The newest schema version this binary knows.
    public static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// The schema version of a database: 0 for an empty one.
    public static func version(of connection: Connection) throws -> Int {
        let hasTable = try connection.scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")?.int64 ?? 0
        if hasTable == 0 {
            let tables = try connection.scalar(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?.int64 ?? 0
            if tables > 0 { throw StoreError.notBatonDatabase(path: connection.path) }
            return 0
        }
        return Int(try connection.scalar("SELECT coalesce(max(version), 0) FROM schema_migrations")?.int64 ?? 0)
    }

    /// Applies the migrations the database lacks; returns the versions applied. `noted` is told,
    /// once a migration is committed, what its rewrite left undone (see `Migration.rewrite`).
    @discardableResult
    public static func migrate(_ connection: Connection, migrations: [Migration] = Migrator.migrations,
                               willApply: ((Migration) -> Void)? = nil,
                               noted: ((Migration, String) -> Void)? = nil) throws -> [Int] {
        let latest = migrations.last?.version ?? 0
        let found = try version(of: connection)
        if found > latest { throw StoreError.schemaTooNew(path: connection.path, found: found, supported: latest) }
        var applied: [Int] = []
        for migration in migrations where migration.version > found {
            var note: String?
            try connection.transaction(immediate: true) {
                // Another process may have migrated while we waited for the lock.
                let current = try version(of: connection)
                if current > latest { throw StoreError.schemaTooNew(path: connection.path, found: current, supported: latest) }
                guard current < migration.version else { return }
                // A new database's steps are quick: only an existing history's are announced.
                if found > 0 { willApply?(migration) }
                try connection.execute("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version    INTEGER PRIMARY KEY,
                        name       TEXT    NOT NULL,
                        applied_at INTEGER NOT NULL
                    )
                    """)
                try connection.execute(migration.sql)
                note = try migration.rewrite?(connection)
                try connection.cached("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)") {
                    try $0.run([.integer(Int64(migration.version)), .text(migration.name), .integer(Timestamp.now.rawValue)])
                }
                applied.append(migration.version)
            }
            if let note { noted?(migration, note) }
        }
        return applied
    }
}
