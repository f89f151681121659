@testable import BatonCore
@testable import BatonEngine
import Testing

/// The conductor's decisions as tables of events and effects: no threads, no clock, no store.
@Suite("Conductor state")
struct ConductorStateTests {
    static let now = Timestamp(rawValue: 1_000_000)
    static let plain = Action(name: "a", exec: ["x"])
    static let replacing = Action(name: "r", exec: ["x"], policy: .replace)
    static let joining = Action(name: "j", exec: ["x"], policy: .join)
    static let queueing = Action(name: "q", exec: ["x"], policy: .queue)
    static let flaky = Action(name: "f", exec: ["x"], timeout: .seconds(10), retry: RetryPolicy(attempts: 1, backoff: .seconds(2)))

    /// A state and the effects of its last event.
    struct Harness {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        var effects: [ConductorState.Effect] = []

        mutating func on(_ event: ConductorState.Event) { effects = state.handle(event, at: ConductorStateTests.now) }

        mutating func trigger(_ token: UInt64, _ action: Action, policy: Policy? = nil) {
            on(.trigger(token, Trigger(action: action, key: action.name, policy: policy ?? action.policy, params: [:], peer: nil)))
        }

        /// The commit of the write in the last effects (the first one, or the one at `index`).
        func commit(_ index: Int = 0) -> ConductorState.CommitID? {
            var ids: [ConductorState.CommitID] = []
            for case let .write(_, id) in effects { ids.append(id) }
            return index < ids.count ? ids[index] : nil
        }

        /// Commits the write at `index` of the last effects, then each write of a `loading` it leads
        /// to (an attempt's process starts only once its `loading` is durable): the effects of all.
        mutating func commitStarting(_ index: Int = 0, at now: Timestamp = ConductorStateTests.now) throws {
            var all = state.handle(.committed(try #require(commit(index)), nil), at: now)
            effects = all
            while let id = loadingCommit {
                effects = state.handle(.committed(id, nil), at: now)
                all += effects
            }
            effects = all
        }

        /// The commit of a write of `loading` transitions in the last effects.
        var loadingCommit: ConductorState.CommitID? {
            for case let .write(entries, id) in effects where entries.contains(where: {
                if case let .transition(transition) = $0 { transition.to == .loading } else { false }
            }) { return id }
            return nil
        }

        var written: [JournalEntry] {
            var all: [JournalEntry] = []
            for case let .write(entries, _) in effects { all += entries }
            return all
        }
        var phases: [Phase] {
            written.compactMap {
                switch $0 {
                case let .created(_, transition), let .transition(transition): transition.to
                default: nil
                }
            }
        }
        var launches: [Int64] {
            var runs: [Int64] = []
            for case let .launch(launch) in effects { runs.append(launch.run) }
            return runs
        }
        var answers: [UInt64: ConductorState.Answer] {
            var all: [UInt64: ConductorState.Answer] = [:]
            for case let .answer(token, answer) in effects { all[token] = answer }
            return all
        }
        var closed: [Int64] {
            var runs: [Int64] = []
            for case let .close(run) in effects { runs.append(run) }
            return runs
        }
    }

    @Test("progress is told at most every 50 ms, the latest winning: a flood of progress lines cannot drown a waiting client")
    func progressCoalesced() throws {
        var h = Harness()
        h.trigger(1, Self.plain)
        try h.commitStarting()
        func progress(_ fraction: Double, at ms: Int64) -> [ConductorState.Effect] {
            h.state.handle(.progress(run: 1, attempt: 1, Progress(fraction: fraction)), at: Self.now + .milliseconds(ms))
        }
        func told(_ effects: [ConductorState.Effect]) -> [Double?] {
            effects.compactMap { effect -> Double?? in
                guard case let .publish(update) = effect, update.transition == nil else { return nil }
                return .some(update.run.progress?.fraction)
            }
        }
        #expect(told(progress(0.1, at: 0)) == [0.1], "the first is told at once")
        let held = progress(0.2, at: 10)
        #expect(told(held).isEmpty)
        #expect(held.contains(.schedule(run: 1, .progress, after: .milliseconds(40))), "the window's end")
        #expect(progress(0.3, at: 20).isEmpty, "one timer for the window, whatever comes")
        #expect(progress(0.4, at: 30).isEmpty)
        #expect(told(h.state.handle(.timer(run: 1, .progress), at: Self.now + .milliseconds(50))) == [0.4], "the latest wins")
        #expect(told(progress(0.5, at: 60)).isEmpty, "a new window began when the held one was told")
        #expect(told(progress(0.6, at: 101)) == [0.6])
        // The run ends with progress held: the timer is cancelled and nothing is told after the end.
        _ = progress(0.7, at: 110)
        let ended = h.state.handle(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))), at: Self.now + .milliseconds(120))
        #expect(ended.contains(.cancelTimers(run: 1)))
        #expect(told(h.state.handle(.timer(run: 1, .progress), at: Self.now + .milliseconds(160))).isEmpty)
    }

    @Test("a trigger of a free key: created in one write; once it commits, loading is stamped and answered; the attempt starts, its timeout armed, once loading commits")
    func createAndStart() throws {
        var h = Harness()
        h.trigger(1, Self.flaky)
        #expect(h.phases == [.queued])
        #expect(h.launches.isEmpty && h.answers.isEmpty)
        // The creation waited 20 s for the store (a lock held by another process): not run time.
        let later = Self.now + .seconds(20)
        h.effects = h.state.handle(.committed(try #require(h.commit()), nil), at: later)
        #expect(h.phases == [.loading])
        #expect(h.written.contains { if case let .transition(t) = $0 { t.to == .loading && t.at == later } else { false } })
        #expect(h.launches.isEmpty, "its process starts once its loading is durable (write-ahead)")
        #expect(!h.effects.contains { if case .schedule(1, .timeout, _) = $0 { true } else { false } },
                "the time its loading waits for the store is not run time: \(h.effects)")
        guard case let .ticket(.created(1), run)? = h.answers[1] else { Issue.record("\(h.effects)"); return }
        #expect(run.phase == .loading && run.startedAt == later)
        h.effects = h.state.handle(.committed(try #require(h.commit()), nil), at: later + .seconds(30))
        #expect(h.launches == [1])
        #expect(h.effects.contains(.schedule(run: 1, .timeout, after: .seconds(10))), "the timeout starts with the process")
    }

    @Test("replaced before its creation was durable: it never starts, and ends cancelled at once")
    func replacedBeforeStart() throws {
        var h = Harness()
        h.trigger(1, Self.replacing)
        let first = try #require(h.commit())
        h.trigger(2, Self.replacing)
        #expect(h.phases == [.queued, .cancelled], "run 2 created; run 1, never started, ends")
        #expect(!h.effects.contains(.stop(run: 1, grace: .seconds(5))), "run 1 has no process to signal")
        let creation = try #require(h.commit(0)), end = try #require(h.commit(1))
        h.on(.committed(first, nil))
        #expect(h.launches.isEmpty, "run 1 was stopped before its creation was durable")
        h.on(.committed(creation, nil))
        #expect(h.phases == [.loading])
        #expect(h.launches.isEmpty, "its process starts once its loading is durable")
        h.on(.committed(try #require(h.commit()), nil))
        #expect(h.launches == [2])
        h.on(.committed(end, nil))
        #expect(h.closed == [1])
    }

    @Test("a join is answered once its record is durable, with the run as it is then, even if it ended meanwhile")
    func joinAfterEnd() throws {
        var h = Harness()
        h.trigger(1, Self.joining)
        try h.commitStarting()
        h.trigger(2, Self.joining)
        let record = try #require(h.commit())
        #expect(h.answers.isEmpty)
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        let end = try #require(h.commit())
        h.on(.committed(record, nil))
        guard case let .ticket(.joined(1), run)? = h.answers[2] else { Issue.record("\(h.effects)"); return }
        #expect(run.phase == .success)
        #expect(h.closed.isEmpty, "its waiters hear the end once it is durable")
        h.on(.committed(end, nil))
        #expect(h.closed == [1])
    }

    @Test("cancel while waiting to retry: the run is listed as cancelled, by whom, not with the attempt's error")
    func cancelRetrying() throws {
        var h = Harness()
        h.trigger(1, Self.flaky)
        try h.commitStarting()
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 3))))
        #expect(h.phases == [.retrying])
        try h.commitStarting()
        h.on(.cancel(2, .action("f", key: nil), by: 1000))
        #expect(h.phases == [.cancelled])
        #expect(h.answers.isEmpty, "answered once the cancel is durable")
        try h.commitStarting()
        guard case let .cancelled(runs)? = h.answers[2] else { Issue.record("\(h.effects)"); return }
        #expect(runs.map(\.phase) == [.cancelled])
        #expect(runs.first?.cancelledBy == 1000)
        #expect(runs.first?.error == nil)
    }

    @Test("a group principal's cancel is recorded with its name (the transition's via), its uid no one's")
    func cancelByGroupPrincipal() throws {
        var h = Harness()
        h.trigger(1, Self.flaky)
        try h.commitStarting()
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 3))))
        try h.commitStarting()
        h.on(.cancel(2, .action("f", key: nil), by: Peer.groupPrincipalUID, principal: "carol@example.org via group:ops"))
        let ends = h.written.compactMap { entry -> Transition? in
            if case let .transition(transition) = entry, transition.to == .cancelled { return transition }
            return nil
        }
        #expect(ends.map(\.detail.via) == ["carol@example.org via group:ops"], "\(h.written)")
        #expect(ends.first?.detail.by == Peer.groupPrincipalUID)
    }

    @Test("a refused creation answers its error, forgets the run, and frees the key")
    func refusedCreation() throws {
        var h = Harness()
        h.trigger(1, Self.plain)
        h.on(.committed(try #require(h.commit()), .storeUnavailable("disk full")))
        #expect(h.answers[1] == .failed(.storeUnavailable("disk full")))
        #expect(h.closed == [1])
        #expect(h.launches.isEmpty)
        h.trigger(2, Self.plain)
        #expect(h.phases == [.queued], "the key is free again")
        try h.commitStarting()
        #expect(h.launches == [2])
    }

    @Test("a follow-up starts in the same write as its holder's end")
    func followUpWithEnd() throws {
        var h = Harness()
        h.trigger(1, Self.queueing)
        try h.commitStarting()
        h.trigger(2, Self.queueing)
        try h.commitStarting()
        guard case .ticket(.followUp(2, after: 1), _)? = h.answers[2] else { Issue.record("\(h.effects)"); return }
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        #expect(h.phases == [.success, .loading])
        #expect(h.launches.isEmpty, "its process starts once this write (its loading) is durable")
        h.on(.committed(try #require(h.commit()), nil))
        #expect(h.launches == [2])
    }

    @Test("a run in flight when a reload forgets its action's estimate is not measured: it ran the replaced definition; a run made after is")
    func forgottenWhileInFlight() throws {
        var h = Harness()
        func at(_ seconds: Int64, _ event: ConductorState.Event) { h.effects = h.state.handle(event, at: Self.now + .seconds(seconds)) }
        h.trigger(1, Self.plain)
        try h.commitStarting()
        #expect(h.launches == [1])
        h.state.forget(actions: ["a"])
        at(10, .exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        at(10, .committed(try #require(h.commit()), nil))
        #expect(h.closed == [1] && h.state.lastEnded["a"]?.phase == .success)
        #expect(h.state.estimates.median("a") == nil, "the 10 s of the replaced definition")
        h.trigger(2, Self.plain)
        at(20, .committed(try #require(h.commit()), nil))
        at(20, .committed(try #require(h.commit()), nil))
        #expect(h.launches == [2])
        at(24, .exited(run: 2, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        at(24, .committed(try #require(h.commit()), nil))
        #expect(h.closed == [2])
        #expect(h.state.estimates.median("a") == 4_000_000, "made after the reload: measured")
    }

    @Test("a timeout during the backoff ends the run as failure, reason timeout; the backoff that fires later is ignored")
    func timeoutDuringBackoff() throws {
        var h = Harness()
        h.trigger(1, Self.flaky)
        try h.commitStarting()
        #expect(h.effects.contains(.schedule(run: 1, .timeout, after: .seconds(10))))
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 1))))
        #expect(h.effects.contains { if case .schedule(1, .backoff(1), _) = $0 { true } else { false } })
        h.on(.timer(run: 1, .timeout))
        #expect(h.phases == [.failure])
        guard case let .transition(end)? = h.written.last else { Issue.record("\(h.effects)"); return }
        #expect(end.detail.reason == "timeout")
        #expect(h.effects.contains(.cancelTimers(run: 1)))
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.effects.isEmpty)
    }

    @Test("shutdown: triggers are refused, runs in flight end after the grace, queued runs stay queued")
    func shutdown() throws {
        var h = Harness()
        h.state = ConductorState(maxConcurrentRuns: 1, seed: 1)
        h.trigger(1, Self.plain)
        try h.commitStarting()
        h.trigger(2, Self.joining)
        try h.commitStarting()
        h.on(.shutdown)
        #expect(h.effects.isEmpty)
        h.trigger(3, Self.replacing)
        #expect(h.answers[3] == .failed(.shuttingDown))
        h.on(.graceElapsed)
        #expect(h.effects == [.stop(run: 1, grace: .seconds(5))])
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        #expect(h.phases == [.cancelled])
        #expect(h.launches.isEmpty, "run 2 stays queued for the next start")
        try h.commitStarting()
        #expect(h.effects.contains(.drained))
        #expect(h.state.inFlight.map(\.phase) == [.queued])
    }

    @Test("a second stop signal: the runs stop now, and the drain ends once their processes are gone, their ends durable or not (a full disk)")
    func abandonWrites() throws {
        var h = Harness()
        h.trigger(1, Self.plain)
        try h.commitStarting()
        h.trigger(2, Self.flaky)
        try h.commitStarting()
        h.on(.shutdown)
        h.on(.graceElapsed)
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        #expect(h.phases == [.cancelled])
        #expect(!h.effects.contains(.drained), "run 2 still runs, and run 1's end is not durable")
        h.on(.abandonWrites)
        #expect(h.effects.isEmpty, "run 2 is already stopping: its processes are waited for")
        h.on(.exited(run: 2, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        #expect(h.phases == [.cancelled])
        #expect(h.effects.last == .drainedUnwritten, "no commit came, and none is waited for")
        try h.commitStarting()
        #expect(h.closed == [2], "an end that commits before the exit still closes its run's waiters")
        #expect(!h.effects.contains(.drained))
        #expect(h.state.mode == .stopped)
    }

    @Test("abandonWrites before any shutdown is ignored: triggers are still taken")
    func abandonWritesBeforeShutdown() {
        var h = Harness()
        h.on(.abandonWrites)
        #expect(h.effects.isEmpty)
        #expect(h.state.mode == .accepting && h.state.waitsForWrites)
        h.trigger(1, Self.plain)
        #expect(h.phases == [.queued])
    }

    @Test("recovery: queued again, restarted, interrupted, dropped and superseded, each a transition")
    func recovery() throws {
        var h = Harness()
        let restart = Action(name: "b", exec: ["x"], onInterrupt: .restart)
        func unfinished(_ id: Int64, _ action: String, _ phase: Phase) -> UnfinishedRun {
            UnfinishedRun(run: RunSnapshot(id: id, action: action, key: action, phase: phase, policy: .reject, params: [:],
                                           trigger: nil, queuedAt: Self.now), lastSeq: phase == .queued ? 1 : 2)
        }
        h.on(.recover(1, [
            RecoveredRun(unfinished(3, "a", .loading), action: Self.plain),
            RecoveredRun(unfinished(4, "b", .retrying), action: restart),
            RecoveredRun(unfinished(5, "gone", .queued), action: nil),
            RecoveredRun(unfinished(6, "a", .queued), action: Self.plain),
            RecoveredRun(unfinished(7, "a", .queued), action: Self.plain),
            RecoveredRun(unfinished(8, "a", .queued), action: Self.plain),
        ]))
        #expect(h.phases == [.failure, .queued, .cancelled, .queued, .queued, .cancelled, .loading, .loading])
        var expected = RecoverySummary()
        expected.interrupted = [3]
        expected.restarted = [4]
        expected.requeued = [6, 7]
        expected.dropped = [5, 8]
        #expect(h.answers[1] == .recovered(expected), "answered at once: a full disk at start must not hold batond back")
        #expect(h.state.nextRunID == 9)
    }
}
