import BatonCore
import BatonFleet
import Foundation
import Testing

/// `pauseAfterFailures` and the runs a host's reaper ends: a run lost with its host is a failure
/// of its action as any other, counted in the reaper's transaction.
extension FleetPauseTests {
    @Test("pauseAfterFailures: 2 and two runs whose host died, each ended host_lost by web-1's reaper: the first is counted (not paused), the second pauses the action, in the reaper's transaction")
    func reapedFailuresPause() throws {
        let conninfo = try Postgres.server().database()
        let host = try FleetTests.fleet(1, actions: #"flaky: { exec: ["true"], pauseAfterFailures: 2 },"#, lease: "2s", conninfo: conninfo)[0]
        let db = try PGConnection(conninfo)
        let row = { (run: Int64) in try db.query("SELECT phase, reason FROM runs WHERE id = $1", [String(run)]).first ?? [] }
        let pauses = { try db.query("SELECT paused_by, reason FROM pauses WHERE action = 'flaky'").rows }
        let streak = { try db.query("SELECT failures FROM pause_streaks WHERE action = 'flaky'").first?[0] ?? nil }
        for (index, run) in [Int64(1_000_001), 1_000_002].enumerated() {
            // A run loading on a host whose lease ran out an hour ago (the run first: the reaper
            // finds the host with it).
            let dead = "web-9/\(index)/gone"
            try db.query("""
                INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES ($1, 'flaky', 'flaky', 'loading', 'reject', 0, 'web-9', $2)
                """, [String(run), dead])
            try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms, renewed_at) VALUES ($1, 'web-9', 1, 1000, now() - interval '1 hour')", [dead])
            guard try Eventually.until("web-1's reaper ended run \(run)", { try row(run).first == "failure" }) else { return }
            #expect(try row(run) == ["failure", "host_lost"])
            if index == 0 {
                #expect(try streak() == "1", "the first lost run is counted")
                #expect(try pauses().isEmpty, "one failure of two: not paused")
            }
        }
        let made = try pauses()
        #expect(made.count == 1 && made.first?[0] == "pauseAfterFailures"
            && made.first?[1]?.hasPrefix("2 failures in a row (the last, run 1000002") == true, "\(made)")
        #expect(try streak() == "0", "the pause starts the count again")
        let refused = try host.baton("run", "flaky")
        #expect(refused.code == 75 && refused.stderr.contains("paused by pauseAfterFailures"), "\(refused.stdout)\(refused.stderr)")
        host.stop()
    }

    @Test("pauseAfterFailures: 1 and a run a previous start of web-1 left loading: web-1's next start ends it interrupted and pauses the action, in the takeover's transaction")
    func ownRestartPauses() throws {
        let conninfo = try Postgres.server().database()
        let config = #"{ postgres: "\#(conninfo)", host: "web-1", lease: "2s", actions: { flaky: { exec: ["true"], pauseAfterFailures: 1 } } }"#
        let first = try Daemon(config: config)
        try first.waitForLog("joined the fleet")
        first.stop()
        // A run loading under a previous start of web-1 that nobody took over.
        let db = try PGConnection(conninfo)
        try db.query("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (1000001, 'flaky', 'flaky', 'loading', 'reject', 0, 'web-1', 'web-1/1/gone')
            """)
        let host = try Daemon(config: config)
        try host.waitForLog("joined the fleet")
        #expect(try db.query("SELECT phase, reason FROM runs WHERE id = 1000001").first == ["failure", "interrupted"])
        let made = try db.query("SELECT paused_by, reason FROM pauses WHERE action = 'flaky'").rows
        #expect(made.count == 1 && made.first?[0] == "pauseAfterFailures"
            && made.first?[1]?.hasPrefix("1 failures in a row (the last, run 1000001") == true, "\(made)")
        let refused = try host.baton("run", "flaky")
        #expect(refused.code == 75 && refused.stderr.contains("paused by pauseAfterFailures"), "\(refused.stdout)\(refused.stderr)")
        host.stop()
    }
}
