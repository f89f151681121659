import BatonCore
import BatonIPC
import Foundation
import Testing

/// A key's line (`queue: { depth: 3 }`) over the socket with the real binaries: follow-ups with
/// params of their own, a trigger joining the entry with its params, one beyond the depth
/// refused `busy` with the line's length, `baton status ACTION` listing the places, `baton
/// cancel` closing the line up, a crash with the line waiting, and the runs starting in order.
@Suite("End to end: a key's line", .serialized, .offPool)
struct LineEndToEndTests {
    static func config(gate: FifoGate, log: String) -> String {
        """
        {
          requireUser: false,
          actions: {
            ship: { exec: ["sh", "-c", "echo $BATON_PARAM_REF >> \\"$LOG\\"; cat \\"$GATE\\" > /dev/null"],
                    env: { GATE: "\(gate.path)", LOG: "\(log)" }, params: { ref: { default: "main" } }, queue: { depth: 3 },
                    survivesRestart: false },
          },
        }
        """
    }

    @Test("follow-ups wait in order with their own params; equal params join; beyond the depth busy; cancel closes up; a crash keeps the line")
    func line() throws {
        let gate = try FifoGate()
        let log = gate.directory + "/log"
        let first = try Daemon(config: Self.config(gate: gate, log: log))
        for ref in ["a", "b", "c", "d"] {
            let answer = try PolicyTests.trigger(first, "ship", params: ["ref": ref])
            #expect(answer.ok == true, "\(ref): \(String(describing: answer.error))")
        }
        let joined = try PolicyTests.trigger(first, "ship", params: ["ref": "c"])
        #expect(joined.decision == .coalesced && joined.run?.id == 3)
        let refused = try PolicyTests.trigger(first, "ship", params: ["ref": "e"])
        #expect(refused.error?.code == .busy && refused.error?.run == 1 && refused.error?.line == 3)
        #expect(refused.error?.message.contains("its line is full: 3 runs wait") == true, "\(String(describing: refused.error))")
        let status = try first.baton("status", "ship")
        #expect(status.stdout.contains("ship: line (3 at most): 1. run 2 ref=b, queued"), "\(status.stdout)")
        #expect(status.stdout.contains("; 3. run 4 ref=d, queued"), "\(status.stdout)")
        #expect(try first.baton("cancel", "3").code == 0)
        let closedUp = try first.baton("status", "ship", "--json")
        let runs = (try JSONSerialization.jsonObject(with: Data(closedUp.stdout.utf8)) as? [[String: Any]])?.first?["inFlight"] as? [[String: Any]] ?? []
        #expect(runs.compactMap { run in (run["line"] as? Int).map { "\(run["id"]!)@\($0)" } }.sorted() == ["2@1", "4@2"], "\(closedUp.stdout)")
        // A crash with run 1 loading and 2 and 4 in line: run 1 is interrupted (survivesRestart: false), the line starts in its order.
        first.crash()
        let second = try Daemon(config: Self.config(gate: gate, log: log), reusing: first, name: "after-crash")
        for run: Int64 in [2, 4] {
            gate.release()
            #expect(try PolicyTests.waitFor(second, run: run)?.phase == .success)
        }
        #expect(try PolicyTests.waitFor(second, run: 1)?.phase == .failure)
        #expect(try PolicyTests.waitFor(second, run: 3)?.phase == .cancelled)
        let started = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(started == ["a", "b", "d"], "each run writes its ref as it starts")
    }
}
