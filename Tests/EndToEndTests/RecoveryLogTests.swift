import Foundation
import Testing

/// batond's log of transitions begins before recovery: what a restart ends or starts again is in
/// the log (and the journal, and the run counters) as it is in the history.
@Suite("End to end: recovery's transitions in the log", .offPool)
struct RecoveryLogTests {
    @Test("""
        kill -9 with run 1 loading and run 2 queued behind it: the restarted batond logs run 1 \
        ended interrupted and run 2's start (both were in the history only, when the log began after recovery)
        """)
    func recoveryLogged() throws {
        let gate = try FifoGate()
        let config = """
            { requireUser: false, actions: {
                held: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" }, policy: "queue",
                        survivesRestart: false },
            } }
            """
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "held", "--detach").code == 0)
        #expect(try daemon.baton("run", "held", "--detach").code == 0, "queued behind run 1")
        guard try Eventually.until("run 1 loading", {
            try execute("/usr/bin/sqlite3", [daemon.database, "SELECT phase FROM runs WHERE id = 1"]).stdout == "loading\n"
        }) else { return }
        daemon.crash()
        let again = try Daemon(config: config, reusing: daemon, name: "restarted")
        gate.release()
        #expect(try again.baton("wait", "2").code == 0, "run 2 runs after the restart")
        // Both lines come from the log's worker; run 2's end follows its start, so once that is
        // logged the earlier ones are too.
        try again.waitForLog("run 2 held: loading → success")
        #expect(again.stderr.contains("run 1 held: loading → failure"), "\(again.stderr)")
        #expect(again.stderr.contains("run 2 held: queued → loading"), "\(again.stderr)")
    }
}
