import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// What a host's reaper locks: the pause locks of the actions the gone host has unfinished runs of,
/// not of every action whose failures count (review-fleet7, 3: the reap, on the lease's connection,
/// waited for any host's end or pause of any such action).
extension FleetPauseTests {
    @Test("the reaper ends a gone host's run of flaky while another connection holds the pause lock of steady, an action the gone host had no run of; the end is counted")
    func reaperLocksOnlyTheirActions() throws {
        let conninfo = try Postgres.server().database()
        let actions = #"flaky: { exec: ["true"], pauseAfterFailures: 2 }, steady: { exec: ["true"], pauseAfterFailures: 3 },"#
        let host = try FleetTests.fleet(1, actions: actions, lease: "2s", conninfo: conninfo)[0]
        defer { host.stop() }
        // steady's pause lock held, as by a host's writer ending or pausing a run of steady.
        let holder = try PGConnection(conninfo)
        try holder.execute("BEGIN")
        _ = try holder.query(FleetPauses.lock("steady").statement)
        defer { try? holder.execute("ROLLBACK") }
        let db = try PGConnection(conninfo)
        try db.query("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (1000001, 'flaky', 'flaky', 'loading', 'reject', 0, 'web-9', 'web-9/1/gone')
            """)
        try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms, renewed_at) VALUES ('web-9/1/gone', 'web-9', 1, 1000, now() - interval '1 hour')")
        guard try Eventually.until("web-1's reaper ended run 1000001 with steady's pause lock held elsewhere", {
            try db.query("SELECT phase FROM runs WHERE id = 1000001").first?[0] == "failure"
        }) else { return }
        #expect(try db.query("SELECT phase, reason FROM runs WHERE id = 1000001").first == ["failure", "host_lost"])
        #expect(try db.query("SELECT failures FROM pause_streaks WHERE action = 'flaky'").first?[0] == "1", "the lost run is counted")
    }
}
