import BatonCore
import BatonIPC
import Foundation
import Testing

/// Issue 21, item 5: 100,000 progress lines as fast as an action can write them cut off the
/// client waiting for the run (exit 69, "lost batond"). Progress is now told at most every 50 ms,
/// the latest winning, so a waiting client hears a bounded number of updates and its outcome.
@Suite("End to end: a flood of progress", .offPool)
struct ProgressFloodTests {
    @Test("baton run of an action writing 100,000 progress lines succeeds; the waiting client gets a bounded number of updates")
    func flood() throws {
        let daemon = try Daemon(config: #"""
            { actions: { copy: { exec: ["sh", "-c", "seq 1 100000 | sed 's|$|/100000 copying|' >&3"] } } }
            """#)
        let run = try daemon.baton("run", "copy")
        #expect(run.code == 0, "\(run)")
        // The protocol's view: every update a waiting client is sent, then the outcome.
        let client = try Client(path: daemon.socket)
        var updates = 0
        let outcome = try client.call(Request(op: .trigger, action: "copy")) { _ in updates += 1 }
        #expect(outcome.run?.phase == .success)
        let took = Double((outcome.run?.endedAt?.rawValue ?? 0) - (outcome.run?.startedAt?.rawValue ?? 0)) / 1_000_000
        // At most one progress update per 50 ms window, plus the transitions: generous headroom.
        #expect(updates <= Int(took * 20) + 10, "\(updates) updates in \(took) s")
    }
}
