@testable import BatonCore
@testable import BatonEngine
import Testing

/// A planned stop that keeps the runs (`ConductorState+HandOver`), as tables of events and effects.
@Suite("Conductor state: hand-over at shutdown")
struct ConductorHandOverTests {
    typealias H = ConductorStateTests.Harness
    static let mortal: Action = {
        var action = Action(name: "m", exec: ["x"])
        action.survivesRestart = false
        return action
    }()

    /// A state that hands over, with `actions` each triggered and started (runs 1, 2, ...).
    static func loading(_ actions: [Action]) throws -> H {
        var h = H()
        h.state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        h.state.handsOver = true
        for (index, action) in actions.enumerated() {
            h.trigger(UInt64(index + 1), action)
            try h.commitStarting()
            #expect(h.launches == [Int64(index + 1)])
        }
        return h
    }

    @Test("shutdown asks each loading run that survives restarts to be handed over; kept, it writes nothing, no longer holds the exit, and the grace stops only the others")
    func keptRunsLeftLoading() throws {
        var h = try Self.loading([ConductorStateTests.flaky, Self.mortal])
        h.on(.shutdown)
        #expect(h.effects == [.handOver(run: 1, attempt: 1)], "the mortal run gets the grace as before")
        h.on(.handedOver(run: 1, attempt: 1, kept: true))
        #expect(h.effects == [.cancelTimers(run: 1)], "its timeout is the next batond's; nothing is written")
        h.on(.timer(run: 1, .timeout))
        #expect(h.effects.isEmpty, "a timer that fires anyway is ignored")
        h.on(.graceElapsed)
        #expect(h.effects == [.stop(run: 2, grace: .seconds(5))])
        h.on(.exited(run: 2, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        #expect(h.phases == [.cancelled])
        try h.commitStarting()
        #expect(h.effects.contains(.drained), "the handed-over run does not hold the exit")
        #expect(h.state.inFlight.map(\.phase) == [.loading], "run 1 stays loading, for the next batond to adopt")
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        #expect(h.effects.isEmpty, "an end reported after the hand-over is not this batond's")
    }

    @Test("a run whose loading is being written when shutdown begins is asked to be handed over once it launches, not held for the grace and killed")
    func heldAtShutdownHandedOver() throws {
        var (h, loading) = try ConductorStateTests.held()
        h.on(.shutdown)
        #expect(!h.effects.contains(.handOver(run: 1, attempt: 1)), "held: no process to hand over yet")
        h.on(.committed(loading, nil))
        #expect(h.launches == [1], "launched during the drain")
        #expect(h.effects.contains(.handOver(run: 1, attempt: 1)), "launched during the drain and never asked to be handed over: \(h.effects)")
        h.on(.handedOver(run: 1, attempt: 1, kept: true))
        #expect(h.effects.contains(.drained), "kept: it no longer holds the exit")
        h.on(.graceElapsed)
        #expect(!ConductorStateTests.stops(h.effects), "the grace's end kills a run main would have handed over: \(h.effects)")
    }

    @Test("an attempt that ends before its hand-over is answered, its run waiting to retry: left as the shutdown leaves such runs, the late answer ignored, and the drain does not wait for a second attempt")
    func endedWhileAsked() throws {
        var h = try Self.loading([ConductorStateTests.flaky])
        h.on(.shutdown)
        #expect(h.effects == [.handOver(run: 1, attempt: 1)])
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 1))))
        #expect(h.phases == [.retrying])
        #expect(h.effects.contains(.cancelTimers(run: 1)), "its backoff is the next batond's")
        let retrying = try #require(h.commit())
        h.on(.handedOver(run: 1, attempt: 1, kept: false))
        #expect(h.effects.isEmpty, "an answer for an attempt that ended is ignored")
        h.on(.committed(retrying, nil))
        #expect(h.effects.contains(.drained), "the run left retrying does not hold the exit")
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.launches.isEmpty, "no second attempt in this batond")
    }

    @Test("the last kept hand-over drains at once when nothing else runs")
    func drainedByHandOver() throws {
        var h = try Self.loading([ConductorStateTests.plain])
        h.on(.shutdown)
        #expect(!h.effects.contains(.drained))
        h.on(.handedOver(run: 1, attempt: 1, kept: true))
        #expect(h.effects.contains(.drained))
    }

    @Test("a hand-over refused: the run is batond's again, stopped when the grace ends, or at once when it has ended already")
    func refused() throws {
        var h = try Self.loading([ConductorStateTests.plain, ConductorStateTests.joining])
        h.on(.shutdown)
        #expect(h.effects == [.handOver(run: 1, attempt: 1), .handOver(run: 2, attempt: 1)])
        h.on(.handedOver(run: 1, attempt: 1, kept: false))
        #expect(h.effects.isEmpty)
        h.on(.graceElapsed)
        #expect(h.effects == [.stop(run: 1, grace: .seconds(5))], "run 2's hand-over is still under way")
        h.on(.handedOver(run: 2, attempt: 1, kept: false))
        #expect(h.effects == [.stop(run: 2, grace: .seconds(5))])
        h.on(.handedOver(run: 2, attempt: 1, kept: true))
        #expect(h.effects.isEmpty, "an answer to no question is ignored")
    }

    @Test("not handed over: a run being cancelled, and any run where the state does not hand over (a fleet host)")
    func notHandedOver() throws {
        var h = try Self.loading([ConductorStateTests.plain, ConductorStateTests.joining])
        h.on(.cancel(9, .run(1), by: 0))
        h.on(.shutdown)
        #expect(h.effects == [.handOver(run: 2, attempt: 1)])
        var fleet = try Self.loading([ConductorStateTests.plain])
        fleet.state.handsOver = false
        fleet.on(.shutdown)
        #expect(fleet.effects.isEmpty)
    }

    @Test("an adopted run's timeout counts from its first start, not from the adoption: what is left of it, or none")
    func adoptedTimeoutCarriesOn() throws {
        let now = ConductorStateTests.now
        func adopted(_ id: Int64, startedSecondsAgo: Int64, attempt: Int) -> RecoveredRun {
            var run = RunSnapshot(id: id, action: "f", key: "f\(id)", phase: .loading, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Timestamp(rawValue: now.rawValue - startedSecondsAgo * 1_000_000 - 1))
            run.startedAt = Timestamp(rawValue: now.rawValue - startedSecondsAgo * 1_000_000)
            var recovered = RecoveredRun(UnfinishedRun(run: run, lastSeq: 2, pgid: 42, pgidIdentity: "x"), action: ConductorStateTests.flaky)
            recovered.surviving = SurvivingAttempt(attempt: attempt, directory: "/x", pid: 42, identity: "x", alive: true, outputTotal: 0)
            return recovered
        }
        var h = H()
        h.on(.recover(1, [adopted(1, startedSecondsAgo: 7, attempt: 1), adopted(2, startedSecondsAgo: 12, attempt: 2)]))
        var timeouts: [Int64: Duration] = [:]
        for case let .schedule(run, .timeout, after) in h.effects { timeouts[run] = after }
        #expect(timeouts == [1: .seconds(3), 2: .zero], "flaky's timeout is 10 s: 3 s left of run 1's, none of run 2's (its second attempt)")
        #expect(h.launches == [1, 2])
    }

    @Test("a run of an action with a secret param is never handed over, even one adopted (its secrets are not in this batond's memory): the same test as recovery's for a run left retrying")
    func secretActionNeverHandedOver() throws {
        var action = ConductorStateTests.flaky
        action.params = ["token": ParamSpec(secret: true)]
        let now = ConductorStateTests.now
        var run = RunSnapshot(id: 1, action: "f", key: "f", phase: .loading, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: now.rawValue - 2_000_000))
        run.startedAt = Timestamp(rawValue: now.rawValue - 1_000_000)
        run.attempts = 1
        var recovered = RecoveredRun(UnfinishedRun(run: run, lastSeq: 2, pgid: 42, pgidIdentity: "x"), action: action)
        recovered.surviving = SurvivingAttempt(attempt: 1, directory: "/x", pid: 42, identity: "x", alive: true, outputTotal: 0)
        var h = H()
        h.state.handsOver = true
        h.on(.recover(1, [recovered]))
        #expect(h.launches == [1])
        h.on(.shutdown)
        #expect(!h.effects.contains(.handOver(run: 1, attempt: 1)), "\(h.effects)")
        #expect(!ConductorState.mayResumeRetrying(UnfinishedRun(run: run, lastSeq: 2), action))
    }

    @Test("a run waiting to retry is left at once at shutdown (no process): its timers go, nothing is written, it holds no exit")
    func retryingLeft() throws {
        var h = try Self.loading([ConductorStateTests.flaky])
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 1))))
        try h.commitStarting()
        #expect(h.state.inFlight.map(\.phase) == [.retrying])
        h.on(.shutdown)
        #expect(h.effects == [.cancelTimers(run: 1), .drained])
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.effects.isEmpty)
    }

    @Test("a fleet host (leavesRetrying false) does not leave a run waiting to retry at shutdown: it holds the exit and the grace cancels it (shutdown), as before")
    func retryingCancelledOnFleet() throws {
        var h = try Self.loading([ConductorStateTests.flaky])
        h.state.leavesRetrying = false
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 1))))
        try h.commitStarting()
        #expect(h.state.inFlight.map(\.phase) == [.retrying])
        h.on(.shutdown)
        #expect(!h.effects.contains(.drained) && !h.effects.contains(.cancelTimers(run: 1)), "\(h.effects)")
        h.on(.graceElapsed)
        #expect(h.phases == [.cancelled], "\(h.effects)")
        try h.commitStarting()
        #expect(h.effects.contains(.drained))
    }

    @Test("recovery of a run left retrying: it waits out what is left of its backoff (from the history's due time), then its next attempt starts; nothing written before")
    func retryResumed() throws {
        let now = ConductorStateTests.now
        var run = RunSnapshot(id: 1, action: "f", key: "f", phase: .retrying, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: now.rawValue - 5_000_000))
        run.startedAt = Timestamp(rawValue: now.rawValue - 4_000_000)
        run.attempts = 1
        var unfinished = UnfinishedRun(run: run, lastSeq: 3)
        unfinished.retryDue = Timestamp(rawValue: now.rawValue + 2_000_000)
        var h = H()
        h.on(.recover(1, [RecoveredRun(unfinished, action: ConductorStateTests.flaky)]))
        #expect(h.written.isEmpty)
        #expect(h.effects.contains(.schedule(run: 1, .backoff(1), after: .seconds(2))))
        #expect(h.effects.contains(.schedule(run: 1, .timeout, after: .seconds(6))), "10 s from its first start, 4 s ago")
        #expect(h.state.inFlight.map(\.phase) == [.retrying])
        h.trigger(2, ConductorStateTests.flaky)
        try h.commitStarting()
        guard case .failed(.busy(run: 1, _, _, _, _))? = h.answers[2] else { Issue.record("the key is held: \(h.effects)"); return }
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.phases == [.loading])
        #expect(h.launches.isEmpty, "its process starts once its loading is durable")
        h.on(.committed(try #require(h.commit()), nil))
        #expect(h.launches == [1])
        var past = unfinished
        past.retryDue = Timestamp(rawValue: now.rawValue - 1)
        var late = H()
        late.on(.recover(1, [RecoveredRun(past, action: ConductorStateTests.flaky)]))
        #expect(late.effects.contains(.schedule(run: 1, .backoff(1), after: .zero)), "a due time passed meanwhile: at once")
    }

    @Test("a fleet host adopts a run another host left retrying (AdoptedRun with its due time): it waits out what is left of its backoff, nothing written; its next attempt starts then (audit D2 a)")
    func retryAdopted() throws {
        let now = ConductorStateTests.now
        var run = RunSnapshot(id: 1, action: "f", key: "f", phase: .retrying, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: now.rawValue - 5_000_000))
        run.startedAt = Timestamp(rawValue: now.rawValue - 4_000_000)
        run.attempts = 1
        var adopted = AdoptedRun(run: run, seq: 3, action: ConductorStateTests.flaky)
        (adopted.retryDue, adopted.outputTotal) = (Timestamp(rawValue: now.rawValue + 2_000_000), 12)
        var h = H()
        h.on(.adopt(1, adopted))
        #expect(h.written.isEmpty && h.launches.isEmpty)
        #expect(h.effects.contains(.schedule(run: 1, .backoff(1), after: .seconds(2))), "\(h.effects)")
        #expect(h.state.inFlight.map(\.phase) == [.retrying])
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.phases == [.loading])
        h.on(.committed(try #require(h.commit()), nil))
        #expect(h.launches == [1])
        // Its output goes on after the 12 bytes its row holds (review-fleetrecovery9, 11).
        var resumesAt: [Int64?] = []
        for case let .launch(launch) in h.effects { resumesAt.append(launch.outputResumesAt) }
        #expect(resumesAt == [12])
    }
}
