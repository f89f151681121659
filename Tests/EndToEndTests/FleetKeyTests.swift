import BatonCore
import BatonFleet
import Foundation
import Testing

/// Issue 21, item 3 in a fleet: keys in PostgreSQL, and fleet migration 2 on a database that
/// version 1 wrote.
@Suite("End to end: single-flight keys in a fleet", .serialized, .offPool)
struct FleetKeyTests {
    @Test("join across hosts: `a=\"x b=y\" b=z` on one host and `a=x b=\"y b=z\"` on another are two runs")
    func joinAcrossHosts() throws {
        let gates = try KeyTests.RunGates(runs: 1...2)
        let conninfo = try Postgres.server().database()
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: """
                { postgres: "\(conninfo)", host: "web-\(index)", lease: "15s", shutdownGrace: "1s", actions: { \(KeyTests.action(gates)) } }
                """)
            try host.waitForLog("joined the fleet")
            return host
        }
        #expect(try hosts[0].baton("run", "kp", "-p", "a=x b=y", "-p", "b=z", "--detach").stdout == "1\n")
        let second = try hosts[1].baton("run", "kp", "-p", "a=x", "-p", "b=y b=z", "--detach")
        try #require(second.stdout == "2\n", "the second trigger joined run \(second.stdout)")
        gates.release(1)
        gates.release(2)
        for id in [1, 2] { #expect(try hosts[1].baton("wait", "\(id)").code == 0) }
        #expect(Set(gates.log) == ["1|x b=y|z", "2|x|y b=z"])
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT key FROM runs ORDER BY id").rows.map { $0[0] } == ["kp a=x%20b%3Dy b=z", "kp a=x b=y%20b%3Dz"])
    }

    /// Rows as fleet schema version 1 wrote them: id, old key, phase, params.
    static let runs: [(id: Int, key: String, phase: String, params: [String: String])] = [
        // The collision itself: run 2 queued as the follow-up of run 1, which has other params.
        (1, "kp a=x b=y b=z", "loading", ["a": "x b=y", "b": "z"]),
        (2, "kp a=x b=y b=z", "queued", ["a": "x", "b": "y b=z"]),
        // Run 3's new key is run 4's old one, both loading: rewritten in id order, run 3 passes
        // through run 4's key unless the rewrite goes round it.
        (3, "kp a=x y", "loading", ["a": "x y"]),
        (4, "kp a=x%20y", "loading", ["a": "x%20y"]),
        (5, "kp a=p b=q", "success", ["a": "p", "b": "q"]),
        // Run 6 replaced by run 7, same params, still stopping.
        (6, "kp a=1 2", "loading", ["a": "1 2"]),
        (7, "kp a=1 2", "queued", ["a": "1 2"]),
    ]

    static let slots: [(key: String, holder: String?, followUp: String?, draining: String)] = [
        ("kp a=x b=y b=z", "1", "2", "{}"), ("kp a=x y", "3", nil, "{}"), ("kp a=x%20y", "4", nil, "{}"),
        ("kp a=p b=q", nil, nil, "{}"), ("kp a=1 2", "7", nil, "{6}"),
    ]

    @Test("fleet migration 2 rewrites runs, triggers and key slots of a version-1 database; the index of one loading run per key holds")
    func migration() throws {
        let conninfo = try Postgres.server().database()
        let db = try PGConnection(conninfo)
        #expect(try FleetSchema.migrate(db, through: 1) == 1)
        for run in Self.runs {
            try db.query("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, host, incarnation)
                VALUES ($1, 'kp', $2, $3, 'join', $4, 1, 'web-1', 'web-1/1/old')
                """, [String(run.id), run.key, run.phase, JSONText.object(run.params)])
        }
        for slot in Self.slots {
            try db.query("INSERT INTO keys (key, holder, follow_up, draining) VALUES ($1, $2, $3, $4::bigint[])",
                         [slot.key, slot.holder, slot.followUp, slot.draining])
        }
        try db.query("""
            INSERT INTO triggers (run_id, action, key, decision, policy, at, params) VALUES (1, 'kp', 'kp a=x b=y b=z', 'joined', 'join', 2, $1)
            """, [JSONText.object(Self.runs[1].params)])

        #expect(try FleetSchema.migrate(db, through: 2) == 2)
        #expect(try db.query("SELECT id, key FROM runs ORDER BY id").rows == [
            ["1", "kp a=x%20b%3Dy b=z"], ["2", "kp a=x b=y%20b%3Dz"], ["3", "kp a=x%20y"], ["4", "kp a=x%2520y"],
            ["5", "kp a=p b=q"], ["6", "kp a=1%202"], ["7", "kp a=1%202"],
        ])
        #expect(try db.query("SELECT key FROM triggers").rows == [["kp a=x b=y%20b%3Dz"]])
        #expect(try db.query("SELECT key, holder, follow_up, draining FROM keys ORDER BY key COLLATE \"C\"").rows == [
            ["kp a=1%202", "7", nil, "{6}"], ["kp a=p b=q", nil, nil, "{}"], ["kp a=x b=y%20b%3Dz", "2", nil, "{}"],
            ["kp a=x%20b%3Dy b=z", "1", nil, "{}"], ["kp a=x%20y", "3", nil, "{}"], ["kp a=x%2520y", "4", nil, "{}"],
        ])
        #expect(try db.query("SELECT version, name FROM baton_schema ORDER BY version").rows == [["1", "fleet"], ["2", "escaped_keys"]])
        #expect(try db.query("SELECT count(*) FROM pg_indexes WHERE indexname = 'runs_one_active_per_key'").first?[0] == "1")
        #expect(try FleetSchema.migrate(db, through: 2) == 2, "nothing left to apply")
        #expect(try FleetSchema.migrate(db) == FleetSchema.latestVersion)
        // Version 4: the runs written before it have no usage figures.
        #expect(try db.query("SELECT count(*) FROM runs WHERE cpu_user IS NOT NULL OR cpu_system IS NOT NULL OR memory_peak IS NOT NULL").rows == [["0"]])
    }
}
