import BatonCore

/// Brings a PostgreSQL database to the fleet schema this binary knows, from the SQL in
/// `Migrations/postgres/` embedded at build time. Every host migrates at start; a
/// transaction-scoped advisory lock lets one do it while the others wait, and a database from
/// a newer Baton is refused before anything is written.
public enum FleetSchema {
    /// Advisory lock keys (one namespace: "baton" in ASCII, then a number per purpose).
    enum Lock: Int64 {
        case migrate = 0x6261_746F_6E00_0001
        // 0x…0002 was the fleet's write lock (every write, one at a time) until schema version 9:
        // the feed follows commits by transaction id now (FleetFeed+Tick.swift). Never reused.
        /// The reaper of hosts whose lease ran out: one host at a time.
        case reaper = 0x6261_746F_6E00_0003
    }

    public static var latestVersion: Int { embeddedMigrations.last?.version ?? 0 }

    /// The versions whose rows are rewritten in code after their SQL, in the same transaction
    /// (see the version's file). Like the SQL files, never changed once landed.
    static let rewrites: [Int: @Sendable (PGConnection) throws -> Void] = [
        2: FleetStoredKeys.rewrite,
    ]

    /// Applies the migrations the database lacks, up to `last` (tests stop at an older one);
    /// returns its version. `known` is the newest version this binary knows (tests play an older
    /// batond with it): a database newer than that is refused before anything is written.
    @discardableResult
    public static func migrate(_ db: PGConnection, through last: Int = latestVersion, known: Int = latestVersion) throws -> Int {
        try db.transaction {
            try db.query("SELECT pg_advisory_xact_lock($1)", [String(Lock.migrate.rawValue)])
            try db.execute("CREATE TABLE IF NOT EXISTS baton_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            let current = Int(try db.query("SELECT coalesce(max(version), 0) FROM baton_schema").first?[0] ?? "0") ?? 0
            guard current <= known else {
                throw PGError(message: "the database has fleet schema version \(current), newer than this batond knows (\(known)): upgrade Baton on this host")
            }
            for migration in embeddedMigrations where migration.version > current && migration.version <= min(last, known) {
                try db.execute(migration.sql)
                try rewrites[migration.version]?(db)
                try db.query("INSERT INTO baton_schema (version, name) VALUES ($1, $2)", [String(migration.version), migration.name])
            }
            return max(current, min(last, known))
        }
    }
}
