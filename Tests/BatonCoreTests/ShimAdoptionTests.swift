@testable import BatonCore
@testable import BatonEngine
import Testing

/// What a batond starting after another does with each unfinished run's shim (`ShimAdoption`),
/// and what the conductor's state does with an adopted run.
@Suite("Shim adoption")
struct ShimAdoptionTests {
    typealias Facts = ShimAdoption.Facts

    @Test("the decision, fact by fact", arguments: [
        // phase, survives, directory, alive, status → decision
        (Facts(phase: .loading, survives: true, shimDirectory: true, shimAlive: true, statusKept: false), ShimAdoption.Decision.adopt),
        // The shim ended while no batond ran: its status says how.
        (Facts(phase: .loading, survives: true, shimDirectory: true, shimAlive: false, statusKept: true), .collect),
        // Alive and ended at once (the status was written, the shim not yet gone): watched to its end.
        (Facts(phase: .loading, survives: true, shimDirectory: true, shimAlive: true, statusKept: true), .adopt),
        // Gone and no status (SIGKILLed with batond, the OOM killer): interrupted as before.
        (Facts(phase: .loading, survives: true, shimDirectory: true, shimAlive: false, statusKept: false), .recover),
        // No shim directory: the action ran without a shim (none installed, a full disk).
        (Facts(phase: .loading, survives: true, shimDirectory: false, shimAlive: true, statusKept: false), .recover),
        // survivesRestart: false, or the action gone from the config.
        (Facts(phase: .loading, survives: false, shimDirectory: true, shimAlive: true, statusKept: false), .recover),
        // A queued run whose process started before its loading was written: killed, queued again.
        (Facts(phase: .queued, survives: true, shimDirectory: true, shimAlive: true, statusKept: false), .recover),
        // Between attempts there is no process.
        (Facts(phase: .retrying, survives: true, shimDirectory: true, shimAlive: false, statusKept: true), .recover),
    ])
    func decide(_ facts: Facts, _ expected: ShimAdoption.Decision) {
        #expect(ShimAdoption.decide(facts) == expected)
    }

    static let now = Timestamp(rawValue: 1_000_000)

    @Test("an adopted run stays loading and holds its key: a trigger of the key is refused, the attempt is attached (not spawned)")
    func adoptedHoldsKey() {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let action = Action(name: "a", exec: ["x"], retry: RetryPolicy(attempts: 2, backoff: .seconds(1)))
        let run = RunSnapshot(id: 3, action: "a", key: "a", phase: .loading, policy: .reject, params: [:], trigger: nil, queuedAt: Self.now)
        var recovered = RecoveredRun(UnfinishedRun(run: run, lastSeq: 2, pgid: 40, pgidIdentity: "boot:1"), action: action)
        let surviving = SurvivingAttempt(attempt: 2, directory: "/s/3-2", pid: 40, identity: "boot:1", alive: true, outputTotal: 120)
        recovered.surviving = surviving
        let effects = state.handle(.recover(1, [recovered]), at: Self.now)
        var launches: [Launch] = []
        for case let .launch(launch) in effects { launches.append(launch) }
        #expect(launches.map(\.run) == [3] && launches.first?.surviving == surviving)
        var transitions: [Transition] = []
        for case let .write(entries, _) in effects { for case let .transition(transition) in entries { transitions.append(transition) } }
        #expect(transitions.isEmpty, "nothing to write: the run is loading as the history says")
        var summary = RecoverySummary()
        summary.adopted = [3]
        #expect(effects.contains(.answer(1, .recovered(summary))))

        let refused = state.handle(.trigger(2, Trigger(action: action, key: "a", policy: .reject, params: [:], peer: nil)), at: Self.now)
        // The rejection is recorded against run 3, the adopted one (answered once that is written).
        #expect(refused.contains { effect in
            guard case let .write(entries, _) = effect else { return false }
            return entries.contains { if case let .trigger(record) = $0 { record.runID == 3 && record.decision == .rejected } else { false } }
        }, "\(refused)")
        #expect(state.nextRunID == 4)
    }

    @Test("an adopted run keeps its attempt's number and holds its locks: another action sharing a lock waits for it")
    func adoptedKeepsAttemptAndLocks() {
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        var action = Action(name: "a", exec: ["x"], retry: RetryPolicy(attempts: 2, backoff: .seconds(1)))
        action.locks = [LockClaim("db")]
        var other = Action(name: "b", exec: ["y"])
        other.locks = [LockClaim("db")]
        let run = RunSnapshot(id: 3, action: "a", key: "a", phase: .loading, policy: .reject, params: [:], trigger: nil, queuedAt: Self.now)
        var recovered = RecoveredRun(UnfinishedRun(run: run, lastSeq: 2, pgid: 40, pgidIdentity: "boot:1"), action: action)
        recovered.surviving = SurvivingAttempt(attempt: 2, directory: "/s/3-2", pid: 40, identity: "boot:1", alive: true, outputTotal: 0)
        var launches: [Launch] = []
        for case let .launch(launch) in state.handle(.recover(1, [recovered]), at: Self.now) { launches.append(launch) }
        #expect(launches.map(\.attempt) == [2], "attempt 2 goes on as attempt 2")
        #expect(state.locksHeld["db"] == [3])
        // b's run is made; once its creation is written it could start, but for db.
        var started: [Launch] = []
        var effects = state.handle(.trigger(2, Trigger(action: other, key: "b", policy: .reject, params: [:], peer: nil)), at: Self.now)
        for _ in 0..<3 {
            var commits: [ConductorState.CommitID] = []
            for effect in effects {
                if case let .launch(launch) = effect { started.append(launch) }
                if case let .write(_, commit) = effect { commits.append(commit) }
            }
            effects = commits.flatMap { state.handle(.committed($0, nil), at: Self.now) }
        }
        #expect(started.isEmpty, "b waits for db, which the adopted run holds")
        #expect(state.snapshot(of: 4)?.phase == .queued)
    }
}
