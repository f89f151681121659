import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// A key's line across a fleet: two hosts append to one line, kept in the key's row
/// (`keys.line`, schema 16), decided by the engine's one function in each host's trigger batch.
@Suite("End to end: a key's line across a fleet", .serialized, .offPool)
struct FleetLineTests {
    @Test("two hosts fill one line in order; equal params join an entry; beyond the depth busy; cancel closes the row's line up; runs start first in first out")
    func line() throws {
        let gate = try FifoGate()
        let log = gate.directory + "/log"
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            ship: { exec: ["sh", "-c", "echo $BATON_PARAM_REF >> \\"$LOG\\"; cat \\"$GATE\\" > /dev/null"],
                    env: { GATE: "\(gate.path)", LOG: "\(log)" }, params: { ref: { default: "main" } }, queue: { depth: 3 } },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        var made: [String: Int64] = [:]
        for (index, ref) in ["a", "b", "c", "d"].enumerated() {
            let answer = try PolicyTests.trigger(hosts[index % 2], "ship", params: ["ref": ref])
            #expect(answer.ok == true, "\(ref): \(String(describing: answer.error))")
            made[ref] = answer.run?.id
        }
        let line = { try db.query("SELECT line FROM keys WHERE key = 'ship'").first?[0] ?? nil }
        let ids = ["b", "c", "d"].compactMap { made[$0] }.map(String.init)
        #expect(try line() == "{" + ids.joined(separator: ",") + "}")
        let joined = try PolicyTests.trigger(hosts[1], "ship", params: ["ref": "c"])
        #expect(joined.decision == .coalesced && joined.run?.id == made["c"])
        let refused = try PolicyTests.trigger(hosts[0], "ship", params: ["ref": "e"])
        #expect(refused.error?.code == .busy && refused.error?.line == 3 && refused.error?.run == made["a"], "\(String(describing: refused.error))")
        // Any host's status lists the line from the key's row (read by its feed, once a second).
        try Eventually.until("web-2's status shows ship's line") {
            try hosts[1].baton("status", "ship").stdout.contains("ship: line (3 at most): 1. run \(made["b"] ?? 0) ref=b")
        }
        #expect(try hosts[1].baton("cancel", String(made["c"] ?? 0)).code == 0)
        try Eventually.value("ship's line b, d", { try line() }) { $0 == "{\(made["b"] ?? 0),\(made["d"] ?? 0)}" }
        for ref in ["a", "b", "d"] {
            gate.release()
            #expect(try FleetTests.wait(hosts[0], run: made[ref] ?? 0)?.phase == .success)
        }
        #expect(try FleetTests.wait(hosts[0], run: made["c"] ?? 0)?.phase == .cancelled)
        #expect(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") == ["a", "b", "d"])
        #expect(try line() == "{}")
        for host in hosts { host.stop() }
    }
}
