@testable import BatonCore
@testable import BatonEngine
import Testing

/// `cooldown`: a trigger within the window after its key's last success runs nothing and is
/// answered with that success, recorded against it as `cooled`.
@Suite("Conductor state: cooldown")
struct ConductorCooldownTests {
    static let start = Timestamp(rawValue: 1_000_000_000)
    static var deploy: Action {
        var action = Action(name: "deploy", exec: ["x"], policy: .reject, policies: [.join, .queue, .replace])
        action.cooldown = .seconds(600)
        return action
    }

    @Test("the window is half open, forced triggers pass only where the action allows force, no cooldown never cools",
          arguments: [
              (600, 599, false, false, true), (600, 600, false, false, false), (600, 0, false, false, true),
              (600, 10, true, true, false), (600, 10, true, false, true), (600, 10, false, true, true),
              (nil, 10, false, false, false),
          ] as [(Int?, Int, Bool, Bool, Bool)])
    func window(cooldown: Int?, after: Int, forced: Bool, allows: Bool, cools: Bool) {
        #expect(KeySlot.cools(lastSuccess: Self.start, cooldown: cooldown.map { .seconds($0) }, forced: forced, allowsForce: allows,
                              now: Self.start + .seconds(after)) == cools)
        #expect(!KeySlot.cools(lastSuccess: nil, cooldown: .seconds(600), forced: false, allowsForce: false, now: Self.start))
    }

    /// Issue 37, item 4: with the wall clock stepped back 10 minutes, a 5 s cooldown answered
    /// "succeeded, nothing run" for 10 minutes. The time since the success on the boot's clock
    /// wins over the wall clocks' difference; without it, a success in the future never cools.
    @Test("measured on the boot's clock when known; a success the wall clock puts in the future never cools",
          arguments: [
              (-600, nil, false), (-1, nil, false), (100, Int?.some(700), false), (3_600, 5, true), (-600, 5, true), (0, 600, false),
          ] as [(Int, Int?, Bool)])
    func steppedClock(wall: Int, elapsed: Int?, cools: Bool) {
        #expect(KeySlot.cools(lastSuccess: Self.start, cooldown: .seconds(600), forced: false, allowsForce: false,
                              now: Self.start + .seconds(wall), elapsed: elapsed.map { .seconds($0) }) == cools)
    }

    @Test("a success this state saw end is measured on the boot's clock: a wall clock stepped either way neither stretches nor cuts the window")
    func boottime() throws {
        let uptime: Duration = .seconds(5_000)
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let created = state.handle(.trigger(1, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil)),
                                   at: Self.start, uptime: uptime)
        guard case let .write(_, first) = try #require(created.first) else { throw Failed() }
        _ = state.handle(.committed(first, nil), at: Self.start, uptime: uptime)
        let ended = state.handle(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))), at: Self.start, uptime: uptime)
        for case let .write(_, id) in ended { _ = state.handle(.committed(id, nil), at: Self.start, uptime: uptime) }
        // Stepped back 10 minutes, 700 s later: the window (600 s) is over, whatever the wall clock says.
        var back = state
        let late = back.handle(.trigger(2, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil)),
                               at: Self.start + .seconds(100), uptime: uptime + .seconds(700))
        #expect(late.contains { if case .write(let e, _) = $0 { e.contains { if case .created = $0 { true } else { false } } } else { false } })
        // Stepped forward an hour, 5 s later: still inside the window.
        var forward = state
        let soon = forward.handle(.trigger(2, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil)),
                                  at: Self.start + .seconds(3_600), uptime: uptime + .seconds(5))
        guard case let .write(entries, _) = try #require(soon.first) else { throw Failed() }
        #expect(entries.contains { if case let .trigger(record) = $0 { record.decision == .cooled } else { false } })
    }

    /// A state whose key `deploy` succeeded with run 1, ended at `start`, its end durable.
    static func succeeded(_ action: Action = deploy) throws -> ConductorState {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let created = state.handle(.trigger(1, Trigger(action: action, key: "deploy", policy: .reject, params: [:], peer: nil)),
                                   at: start + .seconds(-5))
        guard case let .write(_, first) = try #require(created.first) else { throw Failed() }
        _ = state.handle(.committed(first, nil), at: start + .seconds(-5))
        let ended = state.handle(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))), at: start)
        for case let .write(_, id) in ended { _ = state.handle(.committed(id, nil), at: start) }
        return state
    }

    struct Failed: Error {}

    func trigger(_ state: inout ConductorState, _ token: UInt64, policy: Policy, force: Bool = false, action: Action = deploy,
                 after seconds: Int) -> [ConductorState.Effect] {
        state.handle(.trigger(token, Trigger(action: action, key: "deploy", policy: policy, params: [:], peer: nil, force: force)),
                     at: Self.start + .seconds(seconds))
    }

    @Test("inside the window every policy is answered with the success, recorded as cooled against it, and nothing starts",
          arguments: Policy.allCases)
    func cooled(policy: Policy) throws {
        var state = try Self.succeeded()
        let effects = trigger(&state, 2, policy: policy, after: 120)
        guard case let .write(entries, id) = try #require(effects.first), effects.count == 1 else {
            Issue.record("expected one write, got \(effects)")
            return
        }
        guard case let .trigger(record) = try #require(entries.first), entries.count == 1 else {
            Issue.record("expected the trigger's record, got \(entries)")
            return
        }
        #expect(record.decision == .cooled && record.runID == 1 && record.policy == policy)
        let answered = state.handle(.committed(id, nil), at: Self.start + .seconds(120))
        guard case let .answer(2, .ticket(decision, run)) = try #require(answered.first) else {
            Issue.record("expected the answer, got \(answered)")
            return
        }
        #expect(decision == .cooled(1))
        #expect(run.id == 1 && run.phase == .success && run.endedAt == Self.start)
        #expect(state.inFlight.isEmpty && state.nextRunID == 2)
    }

    @Test("after the window, or forced where allowed, a trigger creates a run; forced where not allowed, it cools")
    func runs() throws {
        var late = try Self.succeeded()
        #expect(late.handle(.trigger(2, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil)),
                            at: Self.start + .seconds(600)).contains { if case .write(let e, _) = $0 { e.contains { if case .created = $0 { true } else { false } } } else { false } })
        var forcedAllowed = Self.deploy
        forcedAllowed.allowsForce = true
        var forced = try Self.succeeded(forcedAllowed)
        _ = trigger(&forced, 2, policy: .reject, force: true, action: forcedAllowed, after: 1)
        #expect(forced.inFlight.map(\.id) == [2])
        var refused = try Self.succeeded()
        _ = trigger(&refused, 2, policy: .replace, force: true, after: 1)
        #expect(refused.inFlight.isEmpty)
    }

    @Test("a success is seeded from the history (a restart keeps the window); a later one wins; a failure opens none")
    func seeded() {
        var state = ConductorState(maxConcurrentRuns: 1)
        var old = RunSnapshot(id: 3, action: "deploy", key: "deploy", phase: .success, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Self.start)
        old.endedAt = Self.start + .seconds(-700)
        var recent = old
        recent.id = 7
        recent.endedAt = Self.start
        var failed = recent
        failed.id = 8
        failed.phase = .failure
        state.remember(successes: [recent, old, failed])
        #expect(state.successes["deploy"]?.id == 7)
        _ = trigger(&state, 1, policy: .reject, after: 120)
        #expect(state.inFlight.isEmpty)
    }

    @Test("a success opens the window when decided, before its end is durable: a trigger in between cools")
    func beforeDurable() throws {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let created = state.handle(.trigger(1, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil)),
                                   at: Self.start + .seconds(-5))
        guard case let .write(_, first) = try #require(created.first) else { throw Failed() }
        _ = state.handle(.committed(first, nil), at: Self.start + .seconds(-5))
        _ = state.handle(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))), at: Self.start)
        _ = trigger(&state, 2, policy: .reject, after: 1)
        #expect(state.inFlight.map(\.id) == [1], "only the success, not yet durable; no new run")
    }
}
