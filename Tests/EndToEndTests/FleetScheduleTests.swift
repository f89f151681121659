import BatonCore
import BatonIPC
import Foundation
import Testing

/// Issue 28, item 3 in a fleet: every host's timer fires the same slot; one run is made, the
/// others join it or, once it ended, run nothing ("scheduled slot already ran").
@Suite("End to end: schedule slots in a fleet", .serialized, .offPool)
struct FleetScheduleTests {
    static let slot: Int64 = 1_764_558_000_000_000

    static func fire(_ host: Daemon, slot: Int64 = slot, detach: Bool = true) throws -> Response {
        try Client(path: host.socket).call(Request(op: .trigger, action: "gated", detach: detach, slot: slot))
    }

    @Test("two hosts firing one slot at once make one run, even under replace; a host firing it again after its end runs nothing")
    func oneRunPerSlot() async throws {
        let gate = try FifoGate()
        let hosts = try FleetTests.fleet(2, actions: FleetTests.gated(gate, policy: "replace"))
        let (a, b) = (hosts[0], hosts[1])
        async let first = onThread { try Self.fire(a) }
        async let second = onThread { try Self.fire(b) }
        let answers = try await [first, second]
        let ids = Set(answers.compactMap(\.run?.id))
        #expect(ids.count == 1, "one run for the slot: \(answers.map { "\($0.decision.map(\.rawValue) ?? "-") \($0.run?.id ?? 0)" })")
        #expect(Set(answers.compactMap(\.decision)) == [.created, .joined])
        let id = try #require(ids.first)
        gate.release()
        #expect(try FleetTests.wait(b, run: id)?.phase == .success)

        for host in hosts {
            let again = try Self.fire(host, detach: false)
            #expect(again.decision == .slotRan && again.run?.id == id && again.run?.slot?.rawValue == Self.slot,
                    "\(again.decision.map(\.rawValue) ?? "-") \(again.run?.id ?? 0) \(again.error?.message ?? "")")
        }
        let history = try a.baton("history", "--json").stdout
        #expect(history.components(separatedBy: #""action" : "gated""#).count == 2, "one run in the fleet's history: \(history)")
        let show = try b.baton("show", "\(id)").stdout
        #expect(show.contains("scheduled slot already ran"), "\(show)")
        for host in hosts { host.stop() }
    }
}
