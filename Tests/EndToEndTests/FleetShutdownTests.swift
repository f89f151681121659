import BatonCore
import BatonIPC
import Foundation
import Testing

/// A host of a fleet that stops cleanly (SIGTERM) gives its lease up at once: the runs it leaves
/// queued are the fleet's, and another host takes them over, as it would a lost host's.
@Suite("End to end: a fleet host that stops cleanly", .serialized, .offPool)
struct FleetShutdownTests {
    // `survivesRestart: false`: the run in flight is cancelled at the stop, as before issue 41, part 3.
    @Test("a follow-up queued on a host that stops cleanly runs on another host; its key is not held for ever")
    func queuedRunTakenOver() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: """
                { postgres: "\(conninfo)", host: "web-\(index)", lease: "2s", shutdownGrace: "0s", actions: { \(FleetTests.gated(gate, extra: #", survivesRestart: false"#)) } }
                """)
            try host.waitForLog("joined the fleet")
            return host
        }
        let (a, b) = (hosts[0], hosts[1])
        defer { b.stop() }
        let running = try #require(try FleetTests.trigger(a, "gated").run?.id)
        let followUp = try FleetTests.trigger(a, "gated", policy: .queue)
        #expect(followUp.decision == .followUp && followUp.run?.host == "web-1")
        let next = try #require(followUp.run?.id)
        a.signal(SIGTERM)
        #expect(a.waitForExit(within: 30) != nil, "web-1 did not stop: \(a.stderr.suffix(2_000))")
        #expect(try FleetTests.wait(b, run: running)?.phase == .cancelled)
        // web-2's reaper hands the follow-up over; it starts there once the key is free.
        try #require(try FleetTests().waitUntilPhase(b, next, .loading), "web-2: \(b.stderr.suffix(2_000))")
        gate.release()
        let ended = try FleetTests.wait(b, run: next)
        #expect(ended?.phase == .success && ended?.host == "web-2", "\(String(describing: ended))")
    }
}
