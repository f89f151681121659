import BatonCore
import BatonFleet
import Foundation
import Testing

/// The reaper's work is done on a connection of its own (`FleetLease.reapAside`): a reap held up
/// (a dead host's run's key row locked by another transaction, a loaded server) never holds this
/// host's renewals back. On the renewals' connection, the reaping host's fence (1.5 s into a 2 s
/// lease) counted on through the reap, and a survivor fenced itself while taking over (flake33).
@Suite("End to end: a slow reap and the lease", .serialized, .offPool)
struct FleetReapTests {
    @Test("a reap waiting 5 s for a dead host's run's key row: the reaping host renews all along and never fences; the run is taken over once the row is free")
    func slowReapKeepsLease() throws {
        let (a, b, db, conninfo, scratch) = try FleetRecoveryTests.fleet(leases: ("2s", "4s"))
        defer { FleetRecoveryTests.clean(scratch) }
        defer { b.stop() }
        let holder = try PGConnection(conninfo)
        let web2 = try #require(try db.query("SELECT incarnation FROM hosts WHERE name = 'web-2' AND gone_at IS NULL").first?[0] ?? nil)
        let id = try FleetRecoveryTests.trigger(a, "swap")
        try FleetRecoveryTests.waitStarted(id, "swap", scratch: scratch)
        // The run's key row, held: web-2's reap locks it before it writes any of web-1's runs' transitions.
        try holder.execute("BEGIN")
        _ = try holder.query("SELECT key FROM keys WHERE key = 'swap' FOR UPDATE")
        let holderPID = try #require(try holder.query("SELECT pg_backend_pid()").first?[0] ?? nil)
        a.crash()
        guard Eventually.until("web-2's reap waits for the key's row", within: 30, {
            (try? db.query("SELECT count(*) FROM pg_stat_activity WHERE \(holderPID) = ANY (pg_blocking_pids(pid))").first?[0]).flatMap { $0 }
                .flatMap { Int($0) }.map { $0 > 0 } ?? false
        }) else { _ = try? holder.execute("ROLLBACK"); return }
        let blockedAt = try #require(try db.query("SELECT now()::text").first?[0] ?? nil)
        // Past its fence's time (3 s into its 4 s lease), by the database's clock: web-2's renewals went on
        // (its incarnation's row). Its lease is not the 2 s one: a loaded machine alone stalls a renewal 1.5 s.
        Eventually.until("web-2 renewed its lease 5 s into the held reap", within: 30) {
            (try? db.query("SELECT 1 FROM hosts WHERE incarnation = $1 AND gone_at IS NULL AND renewed_at > $2::timestamptz + interval '5 s'",
                           [web2, blockedAt]).first) != nil
        }
        #expect(!b.stderr.contains("fenced"), "web-2 fenced itself while its reap waited: \(b.stderr.suffix(2_000))")
        try holder.execute("COMMIT")
        // The reap goes on: the run restarts on web-2 (its action says `restart`).
        try Eventually.until("run \(id) started again on web-2", within: 60) {
            FleetRecoveryTests.starts("swap", scratch: scratch) == "start \(id)\nstart \(id)\n"
        }
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .success && ended.host == "web-2", "\(ended)")
    }
}
