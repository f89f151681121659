import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// The plans PostgreSQL makes of the fleet's hottest statements, on a database with many keys:
/// performance guarded by `EXPLAIN`, never by timing (as `QueryPlanTests` does for SQLite).
@Suite("End to end: the fleet's statements, planned", .offPool)
struct FleetPlanTests {
    /// A migrated database with `count` keys, each with a finished run, analyzed.
    static func populated(_ count: Int) throws -> PGConnection {
        let db = try PGConnection(try Postgres.server().database())
        _ = try FleetSchema.migrate(db)
        try db.execute("""
            INSERT INTO keys (key) SELECT 'k' || n FROM generate_series(1, \(count)) AS n;
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, 'a', 'k' || n, 'success', 'reject', 0, 'web-1', 'web-1/1/0' FROM generate_series(1, \(count)) AS n;
            ANALYZE keys; ANALYZE runs
            """)
        return db
    }

    @Test("a writer locks its key rows by the primary key, one after the other in key order, not by a scan of every key")
    func lockKeysByIndex() throws {
        let db = try Self.populated(5_000)
        let statement = FleetJournal.lockKeys(runs: [4_000, 12, 4_000], keys: ["k7", "k7", "none"])
        try db.execute("PREPARE lock_keys (bigint[], text[]) AS \(statement.sql)")
        // The plan any host runs it by, after its first executions: the generic one.
        try db.execute("SET plan_cache_mode = force_generic_plan")
        let arguments = statement.parameters.map { "'\($0 ?? "")'" }.joined(separator: ", ")
        let plan = try db.query("EXPLAIN EXECUTE lock_keys (\(arguments))").rows.compactMap { $0[0] }.joined(separator: "\n")
        #expect(plan.contains("Index Scan using keys_pkey on keys") && !plan.contains("Seq Scan on keys"), "\(plan)")
        // Each key once, in key order: the order they are locked in.
        let locked = try db.transaction { try db.query("EXECUTE lock_keys (\(arguments))").rows.compactMap { $0[0] } }
        #expect(locked == ["k12", "k4000", "k7"])
    }
}
