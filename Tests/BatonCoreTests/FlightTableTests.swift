@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Single-flight table")
struct FlightTableTests {
    @Test("a second trigger of a busy key gets what its policy says",
          arguments: [(Policy.reject, FlightTable.Decision.rejected(1)), (.join, .joined(1)),
                      (.queue, .followUp(2, after: 1)), (.replace, .replaced(2, stopping: [1]))])
    func secondTrigger(policy: Policy, expected: FlightTable.Decision) {
        var table = FlightTable(limit: 4)
        #expect(table.trigger(key: "k", policy: policy, candidate: 1) == .created(1))
        #expect(table.trigger(key: "k", policy: policy, candidate: 2) == expected)
    }

    @Test("queue keeps at most one follow-up; later triggers coalesce into it")
    func queueCoalesces() {
        var table = FlightTable(limit: 4)
        _ = table.trigger(key: "k", policy: .queue, candidate: 1)
        #expect(table.trigger(key: "k", policy: .queue, candidate: 2) == .followUp(2, after: 1))
        #expect(table.trigger(key: "k", policy: .queue, candidate: 3) == .coalesced(2))
        #expect(table.trigger(key: "k", policy: .join, candidate: 3) == .joined(1))
    }

    @Test("a line: follow-ups start first in first out; one ended while waiting (cancelled) leaves it, which closes up")
    func lineStartsInOrder() {
        var table = FlightTable(limit: 4)
        _ = table.trigger(key: "k", policy: .queue, candidate: 1, depth: 3)
        #expect(table.trigger(key: "k", policy: .queue, candidate: 2, depth: 3) == .followUp(2, after: 1))
        #expect(table.trigger(key: "k", policy: .queue, candidate: 3, depth: 3) == .followUp(3, after: 2))
        #expect(table.trigger(key: "k", policy: .queue, candidate: 4, depth: 3) == .followUp(4, after: 3))
        #expect(table.trigger(key: "k", policy: .queue, candidate: 5, depth: 3) == .rejected(1, line: 3))
        for id in Int64(1)...4 { table.markDurable(id) }
        #expect(table.admit() == [1])
        table.ended(3)
        #expect(table.line(of: "k") == [2, 4])
        table.ended(1)
        #expect(table.admit() == [2])
        #expect(table.line(of: "k") == [4])
        table.ended(2)
        #expect(table.admit() == [4])
    }

    @Test("recovery takes queued runs back in order: the first holds the key, the rest wait in line up to its depth")
    func requeueRebuildsTheLine() {
        var table = FlightTable(limit: 4)
        var action = Action(name: "a", exec: ["true"])
        action.queueDepth = 2
        let taken = [Int64(7), 9, 8, 10].map { run in
            var slot = table.slot(of: "k")
            guard let decision = KeyDecision.recover(run, of: action, slot: &slot, at: Timestamp(rawValue: 0)) else { return false }
            table.apply(decision, key: "k", slot: slot)
            return true
        }
        #expect(taken == [true, true, true, false])
        #expect(table.holder(of: "k") == 7 && table.line(of: "k") == [9, 8])
        #expect(table.stage(of: 10) == nil)
    }

    @Test("a run starts only once durable, and the follow-up only when the holder ends")
    func durableThenFollowUp() {
        var table = FlightTable(limit: 4)
        _ = table.trigger(key: "k", policy: .queue, candidate: 1)
        _ = table.trigger(key: "k", policy: .queue, candidate: 2)
        #expect(table.admit() == [])
        table.markDurable(2)
        table.markDurable(1)
        #expect(table.admit() == [1])
        table.ended(1)
        #expect(table.admit() == [2])
        table.ended(2)
        #expect(table.holder(of: "k") == nil)
    }

    @Test("replace waits for the replaced run to drain")
    func replaceDrains() {
        var table = FlightTable(limit: 4)
        _ = table.trigger(key: "k", policy: .replace, candidate: 1)
        table.markDurable(1)
        #expect(table.admit() == [1])
        #expect(table.trigger(key: "k", policy: .replace, candidate: 2) == .replaced(2, stopping: [1]))
        table.markDurable(2)
        #expect(table.admit() == [], "run 1 still holds its processes")
        table.ended(1)
        #expect(table.admit() == [2])
    }

    @Test("the concurrency limit keeps further runs waiting, first in first out")
    func limit() {
        var table = FlightTable(limit: 2)
        for id in Int64(1)...5 {
            _ = table.trigger(key: "k\(id)", policy: .reject, candidate: id)
            table.markDurable(id)
        }
        #expect(table.admit() == [1, 2])
        table.ended(2)
        #expect(table.admit() == [3])
        table.ended(1)
        table.ended(3)
        #expect(table.admit() == [4, 5])
        #expect(table.running == 2)
    }

    @Test("keys are independent")
    func keys() {
        var table = FlightTable(limit: 4)
        #expect(table.trigger(key: "deploy env=prod", policy: .reject, candidate: 1) == .created(1))
        #expect(table.trigger(key: "deploy env=staging", policy: .reject, candidate: 2) == .created(2))
        #expect(table.trigger(key: "deploy env=prod", policy: .reject, candidate: 3) == .rejected(1))
    }
}

extension FlightTable {
    /// A live trigger of `key` as the conductor decides it (`KeyDecision`, on the key's slot
    /// alone), taken by the table: the bookkeeping these tests are about.
    mutating func trigger(key: String, policy: Policy, candidate: Int64, depth: Int = 1) -> Decision {
        var action = Action(name: "a", exec: ["true"])
        action.queueDepth = depth
        var slot = slot(of: key)
        switch KeyDecision.decide(.init(action: action, policy: policy), .init(slot: slot, now: Timestamp(rawValue: 0)), slot: &slot,
                                  candidate: { candidate }) {
        case let .created(decision, _):
            apply(decision, key: key, slot: slot)
            return decision
        case let .shared(decision):
            return decision
        case let other:
            Issue.record("a trigger on a slot alone decided \(other)")
            return .rejected(0)
        }
    }
}
