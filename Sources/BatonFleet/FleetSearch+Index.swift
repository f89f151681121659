import BatonCore
import FoundationEssentials

/// The fleet's search index, made only where a host's config asks for it (`search: "index"`), as
/// one host's is: a GIN index of `pg_trgm` trigrams over each chunk as text, which makes each
/// output write dearer (the insert bench's p99 18 ms → 321 ms) and a search of a rare text cheap.
/// Migration 0024 creates the extension where it can; the index is made at a host's start.
extension FleetSearch {
    /// The index's name.
    static let index = "output_chunks_search"

    /// The key of the advisory lock a host holds while it makes the index (one host at a time).
    static let indexLock: Int64 = 0x6261_746F_6E73_6978

    /// Whether the database's schema has the index, built (one being built or left half made by
    /// a failed `CREATE INDEX CONCURRENTLY` is not valid, and not used).
    static func isIndexed(on db: PGConnection) throws -> Bool {
        try db.query("""
            SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relname = $1 AND n.nspname = current_schema() AND i.indisvalid
            """, [index]).first != nil
    }

    /// Why the index cannot be made: the server has no pg_trgm, or has it but the database has
    /// not created it.
    static func missing(on db: PGConnection) throws -> String {
        if try db.query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").first != nil {
            return "pg_trgm is installed but the index \(index) is absent"
        }
        if try db.query("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'").first != nil {
            return "the server has PostgreSQL's pg_trgm extension but this database has not created it: "
                + "as the database's owner, CREATE EXTENSION pg_trgm; then restart batond"
        }
        return "the server has no pg_trgm extension: install it (Debian: part of the postgresql package; elsewhere "
            + "postgresql-contrib), then, as the database's owner, CREATE EXTENSION pg_trgm; then restart batond"
    }

    /// What making the index did.
    enum Made: Equatable, Sendable {
        case present, made, otherHostMaking
        case impossible(String)
    }

    /// Makes the index unless it is there (`CREATE INDEX CONCURRENTLY`: output is written
    /// meanwhile; it reads all kept output, so it may take a while on a big table), one host at
    /// a time; `willMake` is told before it starts. An index a failed build left invalid is
    /// dropped and made again, as is one this build leaves when it fails. Runs outside any
    /// transaction, on a session of its own: its timeouts are set to none.
    static func makeIndex(on db: PGConnection, willMake: (String) -> Void = { _ in }) throws -> Made {
        // Its own session, which may take long and wait for writers' locks: no timeouts of the role's or database's.
        try db.execute("SET statement_timeout = 0; SET lock_timeout = 0")
        if try isIndexed(on: db) { return .present }
        guard try db.query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").first != nil else { return .impossible(try missing(on: db)) }
        guard try db.query("SELECT pg_try_advisory_lock($1::bigint)", [String(indexLock)]).first?[0] == "t" else { return .otherHostMaking }
        defer { _ = try? db.query("SELECT pg_advisory_unlock($1::bigint)", [String(indexLock)]) }
        if try isIndexed(on: db) { return .present }
        let size = try db.query("SELECT pg_size_pretty(pg_total_relation_size('output_chunks'))").first?[0] ?? "?"
        willMake("making the fleet's search index \(index) over \(size) of kept output: this reads all of it and may take a while; "
            + "searches read the newest output meanwhile")
        try db.execute("DROP INDEX CONCURRENTLY IF EXISTS \(index)")
        do {
            try db.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS \(index) ON output_chunks USING gin (encode(bytes, 'escape') gin_trgm_ops)")
        } catch {
            // A failed build leaves an invalid index that every output write still updates: dropped before unlocking.
            if db.isOK { try? db.execute("DROP INDEX CONCURRENTLY IF EXISTS \(index)") }
            throw error
        }
        return .made
    }
}
