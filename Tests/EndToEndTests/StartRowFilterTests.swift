import BatonCore
@testable import BatonFleet
import Testing

/// The looks' WHERE (`StartColumns.filter`) is a pre-filter of the rule, not a rule of its own:
/// on rows covering each fact of `KeyDecision.StartView` (written as PostgreSQL has them), the
/// runs it keeps are exactly those whose start row (`StartColumns`, read back from the server)
/// the rule starts.
@Suite("End to end: the start rows' filter keeps exactly what KeyDecision.mayStart starts", .offPool)
struct StartRowFilterTests {
    static let me = FleetArtifactRowsTests.me

    /// Run `id` of action `a<id>` on key `k<id>`; `sql` then adds what the case needs.
    struct Case: Sendable {
        var id: Int64
        var phase = "queued"
        var holder: Int64?
        var followUp: Int64?
        var draining = "{}"
        var sql = ""
        var starts: Bool
    }

    static func cases(now: Int64) -> [Case] {
        let hour: Int64 = 3_600_000_000
        return [
            Case(id: 1, starts: true),
            Case(id: 2, sql: "UPDATE runs SET debounce_until = \(now + hour) WHERE id = 2", starts: false),
            Case(id: 3, sql: "UPDATE runs SET debounce_until = \(now - hour) WHERE id = 3", starts: true),
            Case(id: 4, draining: "{999}", starts: false),
            // Run 5 follows run 1005 (queued, the holder: it may start).
            Case(id: 5, holder: 1005, followUp: 5,
                 sql: "INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (1005, 'a5', 'k5', 'queued', 'queue', 0, 'web-1', '\(me.incarnation)')",
                 starts: false),
            Case(id: 6, phase: "loading", starts: false),
            Case(id: 7, sql: "INSERT INTO pauses (action, paused_by, reason, at) VALUES ('a7', 'alice', 'db', \(now))", starts: false),
            Case(id: 8, sql: "INSERT INTO pauses (action, paused_by, reason, at, until) VALUES ('a8', 'alice', 'db', \(now - hour), \(now - 1))",
                 starts: true),
            Case(id: 9, sql: "UPDATE runs SET rate_until = \(now + hour) WHERE id = 9", starts: false),
            Case(id: 10, sql: "UPDATE runs SET rate_until = \(now - hour) WHERE id = 10", starts: true),
            Case(id: 11, sql: "INSERT INTO approvals (run_id, action, approvers) VALUES (11, 'a11', 'alice')", starts: false),
            Case(id: 12, sql: "INSERT INTO approvals (run_id, action, approvers, verdict) VALUES (12, 'a12', 'alice', 'approved')", starts: true),
            Case(id: 13, sql: "UPDATE runs SET needs = 'waiting' WHERE id = 13", starts: false),
            Case(id: 14, sql: "UPDATE runs SET needs = 'failed' WHERE id = 14", starts: false),
            Case(id: 15, sql: "UPDATE runs SET needs = 'met' WHERE id = 15", starts: true),
            Case(id: 16, sql: "UPDATE runs SET needs = 'asking' WHERE id = 16", starts: false),
        ]
    }

    @Test("on each fact's rows, the filter keeps exactly the runs the rule starts")
    func filterEqualsRule() throws {
        let (_, db) = try FleetArtifactRowsTests.database()
        // Its runs 1 and 2 are not this test's.
        try db.execute("DELETE FROM runs; DELETE FROM keys")
        let now = try FleetDebounceTests.databaseNow(db)
        let cases = Self.cases(now: now)
        for c in cases {
            try db.query("INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES ($1, $2, $3, $4, 'queue', 0, 'web-1', $5)",
                         [String(c.id), "a\(c.id)", "k\(c.id)", c.phase, Self.me.incarnation])
            try db.query("INSERT INTO keys (key, holder, follow_up, draining) VALUES ($1, $2, $3, $4::bigint[])",
                         ["k\(c.id)", String(c.holder ?? c.id), c.followUp.map(String.init), c.draining])
            if !c.sql.isEmpty { try db.execute(c.sql) }
        }
        let ids = cases.map(\.id) + [1005]
        let read = FleetCoordinator.startable(ids)
        let decoded = try db.query(read.0, read.1).rows.map { try StartColumns.decode($0) }
        #expect(decoded.count == ids.count)
        let me = Self.me.incarnation
        let started = Set(decoded.filter { $0.verdict(me: me) == .start }.map(\.run.id))
        #expect(started == Set(cases.filter(\.starts).map(\.id) + [1005]), "the rule, on the rows read back")
        let filtered = try db.query("""
            SELECT r.id FROM runs r JOIN keys k ON k.key = r.key WHERE r.incarnation = $1 AND \(StartColumns.filter)
            """, [Self.me.incarnation]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        #expect(Set(filtered) == started, "the filter")
        #expect(decoded.first { $0.run.id == 14 }?.verdict(me: me) == .end(.needFailed))
        #expect(decoded.first { $0.run.id == 11 }?.verdict(me: me) == .wait(.approval))
    }
}
