@testable import BatonCore
@testable import BatonEngine
import Testing

/// `--scheduled`: triggers of one action and slot make one run whatever the policy; a slot whose
/// run ended runs nothing and is answered with that run, recorded as "scheduled slot already ran".
@Suite("Conductor state: schedule slots")
struct ConductorSlotTests {
    static let start = Timestamp(rawValue: 1_800_000_000_000_000)
    static let slot = Timestamp(rawValue: 1_800_000_000_000_000)
    static let backup = Action(name: "backup", exec: ["x"], policy: .reject, policies: [.join, .queue, .replace])
    struct Failed: Error {}

    @Test("the decision for a slot's run, by whether it ended", arguments: [
        (nil, false, SlotBook.Finding.free), (nil, true, .free), (4, false, .inFlight(4)), (4, true, .ran(4)),
    ] as [(Int64?, Bool, SlotBook.Finding)])
    func decide(run: Int64?, ended: Bool, finding: SlotBook.Finding) {
        #expect(SlotBook.decide(run: run, ended: ended) == finding)
    }

    static func trigger(_ token: UInt64, policy: Policy, slot: Timestamp? = slot) -> ConductorState.Event {
        .trigger(token, Trigger(action: backup, key: "backup", policy: policy, params: [:], peer: nil, via: "schedule", slot: slot))
    }

    /// Commits every write among `effects` (and those their commits cause); returns the answers.
    static func settle(_ state: inout ConductorState, _ effects: [ConductorState.Effect], at now: Timestamp) -> [ConductorState.Answer] {
        var queue = effects, answers: [ConductorState.Answer] = []
        while !queue.isEmpty {
            let effect = queue.removeFirst()
            if case let .write(_, id) = effect { queue += state.handle(.committed(id, nil), at: now) }
            if case let .answer(_, answer) = effect { answers.append(answer) }
        }
        return answers
    }

    static func records(_ effects: [ConductorState.Effect]) -> [TriggerRecord] {
        effects.flatMap { effect -> [TriggerRecord] in
            guard case let .write(entries, _) = effect else { return [] }
            return entries.compactMap { if case let .trigger(record) = $0 { record } else { nil } }
        }
    }

    @Test("a second trigger of the slot while its run is in flight joins it, whatever the policy", arguments: Policy.allCases)
    func joins(policy: Policy) {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        _ = Self.settle(&state, state.handle(Self.trigger(1, policy: .reject), at: Self.start), at: Self.start)
        #expect(state.inFlight.map(\.id) == [1] && state.inFlight.first?.slot == Self.slot)
        let effects = state.handle(Self.trigger(2, policy: policy), at: Self.start + .seconds(1))
        #expect(Self.records(effects).map(\.decision) == [.joined])
        let answers = Self.settle(&state, effects, at: Self.start + .seconds(1))
        #expect(answers.contains { if case .ticket(.joined(1), _) = $0 { true } else { false } })
        #expect(state.inFlight.map(\.id) == [1] && state.nextRunID == 2)
    }

    @Test("a trigger of a slot whose run ended, with any outcome, runs nothing and is answered with that run",
          arguments: [(0, Phase.success), (1, .failure)] as [(Int32, Phase)])
    func ran(status: Int32, phase: Phase) {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        _ = Self.settle(&state, state.handle(Self.trigger(1, policy: .queue), at: Self.start), at: Self.start)
        let end = state.handle(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: status))), at: Self.start + .seconds(2))
        _ = Self.settle(&state, end, at: Self.start + .seconds(2))
        for policy in Policy.allCases {
            let effects = state.handle(Self.trigger(9, policy: policy), at: Self.start + .seconds(3))
            #expect(Self.records(effects).map(\.decision) == [.slotRan])
            #expect(Self.records(effects).first?.decision.description == "scheduled slot already ran")
            let answers = Self.settle(&state, effects, at: Self.start + .seconds(3))
            guard case let .ticket(decision, run) = answers.first else {
                Issue.record("expected a ticket, got \(answers)")
                continue
            }
            #expect(decision == .slotRan(1) && run.phase == phase && run.slot == Self.slot)
        }
        #expect(state.inFlight.isEmpty && state.nextRunID == 2)
    }

    @Test("another slot, or a trigger without one, is decided by the key and policy as before")
    func otherSlots() {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        _ = Self.settle(&state, state.handle(Self.trigger(1, policy: .reject), at: Self.start), at: Self.start)
        let next = Self.slot + .seconds(60)
        let busy = Self.settle(&state, state.handle(Self.trigger(2, policy: .reject, slot: next), at: Self.start), at: Self.start)
        #expect(busy.contains { if case .failed(.busy) = $0 { true } else { false } })
        _ = Self.settle(&state, state.handle(Self.trigger(3, policy: .queue, slot: next), at: Self.start), at: Self.start)
        #expect(state.inFlight.map(\.id) == [1, 2] && state.inFlight.last?.slot == next)
        _ = Self.settle(&state, state.handle(Self.trigger(4, policy: .queue, slot: nil), at: Self.start), at: Self.start)
        #expect(state.inFlight.map(\.id) == [1, 2], "an unscheduled trigger coalesces into the follow-up")
    }

    @Test("slots seeded from the history survive a restart; a creation the store refused frees its slot")
    func seededAndAbandoned() {
        var state = ConductorState(maxConcurrentRuns: 1)
        var old = RunSnapshot(id: 5, action: "backup", key: "backup", phase: .success, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Self.start)
        old.slot = Self.slot
        state.remember(slots: [old])
        let effects = state.handle(Self.trigger(1, policy: .replace), at: Self.start)
        #expect(Self.records(effects).map(\.decision) == [.slotRan] && state.inFlight.isEmpty)

        var refused = ConductorState(maxConcurrentRuns: 1)
        let created = refused.handle(Self.trigger(1, policy: .reject), at: Self.start)
        for case let .write(_, id) in created { _ = refused.handle(.committed(id, .storeUnavailable("full")), at: Self.start) }
        #expect(refused.inFlight.isEmpty)
        _ = Self.settle(&refused, refused.handle(Self.trigger(2, policy: .reject), at: Self.start), at: Self.start)
        #expect(refused.inFlight.map(\.id) == [2], "the slot was free again")
    }

    @Test("the book keeps the newest slots of each action and the first run of a slot")
    func book() {
        var book = SlotBook()
        func run(_ id: Int64, _ at: Int64, action: String = "backup") -> RunSnapshot {
            var run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Self.start)
            run.slot = Timestamp(rawValue: at)
            return run
        }
        for i in 0..<Int64(SlotBook.kept + 10) { book.record(run(i + 1, i)) }
        book.record(run(999, 1, action: "other"))
        #expect(book.count == SlotBook.kept + 1)
        #expect(book.run(for: .init(action: "backup", at: Timestamp(rawValue: 9))) == nil)
        #expect(book.run(for: .init(action: "backup", at: Timestamp(rawValue: 10)))?.id == 11)
        book.record(run(5_000, 10))
        #expect(book.run(for: .init(action: "backup", at: Timestamp(rawValue: 10)))?.id == 11, "the first run keeps its slot")
        #expect(book.run(for: .init(action: "other", at: Timestamp(rawValue: 1)))?.id == 999)
    }
}
