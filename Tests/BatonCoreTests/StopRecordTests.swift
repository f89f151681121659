@testable import BatonCore
@testable import BatonEngine
import Testing

/// A cancel or a replace asked of a running run is written down as its process is told to stop
/// (`JournalEntry.stopAsked`, `RunMachine.Stop.outlivesBatond`), so that a batond started after a
/// crash ends the run as asked: not started again where its action says `onInterrupt: "restart"`
/// (review-fleetrecovery12 H1), and a survivor it adopts stopped (M1).
@Suite("A stop asked of a running run, written down")
struct StopRecordTests {
    typealias H = ConductorStateTests.Harness
    static let now = ConductorStateTests.now
    static let restarting = Action(name: "b", exec: ["x"], killGrace: .seconds(5), onInterrupt: .restart)

    @Test("which stops are written down, and their row text round-trips; any other text is an unknown asker's cancel")
    func table() {
        let kept: [RunMachine.Stop] = [.cancelled(by: 1000), .cancelled(by: nil), .replaced(by: 42),
                                       .cancelled(by: Peer.groupPrincipalUID, principal: "carol@example.org via group:ops")]
        for stop in kept {
            #expect(stop.outlivesBatond, "\(stop)")
            #expect(RunMachine.Stop(recordText: stop.recordText) == stop, "\(stop.recordText)")
        }
        let decidedAgain: [RunMachine.Stop] = [.timeout(after: .seconds(1)), .shutdown, .needs("x"), .denied(by: "bob", reason: nil),
                                               .approvalTimedOut(after: .seconds(1))]
        for stop in decidedAgain {
            #expect(!stop.outlivesBatond, "\(stop)")
            #expect(stop.recordText == "cancelled -")
        }
        #expect(RunMachine.Stop(recordText: "") == .cancelled(by: nil))
        #expect(RunMachine.Stop(recordText: "replaced x") == .cancelled(by: nil))
        #expect(RunMachine.Stop(recordText: "cancelled 12") == .cancelled(by: 12))
    }

    /// The state with run 1 of `action` loading, its process started.
    static func loading(_ action: Action) throws -> H {
        var h = H()
        h.trigger(1, action)
        try h.commitStarting()
        #expect(h.launches == [1])
        return h
    }

    static func stopsAsked(_ h: H) -> [JournalEntry] {
        h.written.filter { if case .stopAsked = $0 { true } else { false } }
    }

    @Test("a cancel of a loading run: its stop written in the step that kills it; none for a queued run, a timeout, or a run not yet started")
    func cancelWritten() throws {
        var h = try Self.loading(Self.restarting)
        h.on(.cancel(2, .run(1), by: 42))
        #expect(Self.stopsAsked(h) == [.stopAsked(runID: 1, .cancelled(by: 42))])
        #expect(h.effects.contains(.stop(run: 1, grace: .seconds(5))))

        // A queued run ends at once: nothing to write down.
        var queued = H()
        queued.state = ConductorState(maxConcurrentRuns: 1, seed: 1)
        queued.trigger(1, ConductorStateTests.plain)
        try queued.commitStarting()
        queued.trigger(2, Self.restarting)
        queued.on(.cancel(3, .run(2), by: 42))
        #expect(Self.stopsAsked(queued).isEmpty)
        #expect(queued.phases == [.cancelled])

        // A timeout is decided again by whoever recovers the run.
        var timed = try Self.loading(ConductorStateTests.flaky)
        timed.on(.timer(run: 1, .timeout))
        #expect(Self.stopsAsked(timed).isEmpty)
        #expect(timed.effects.contains { if case .stop(run: 1, _) = $0 { true } else { false } })

        // Stopped while its `loading` is being written: it never starts, and nothing is written down.
        var early = H()
        early.trigger(1, Self.restarting)
        early.on(.committed(try #require(early.commit()), nil))
        #expect(early.loadingCommit != nil)
        early.on(.cancel(2, .run(1), by: 42))
        #expect(Self.stopsAsked(early).isEmpty)
    }

    @Test("a cancel that meets a run already stopping for a timeout is written down too; the run ends as the timeout says")
    func cancelAfterTimeout() throws {
        var h = try Self.loading(ConductorStateTests.flaky)
        h.on(.timer(run: 1, .timeout))
        #expect(Self.stopsAsked(h).isEmpty)
        h.on(.cancel(2, .run(1), by: 42))
        #expect(Self.stopsAsked(h) == [.stopAsked(runID: 1, .cancelled(by: 42))], "a restart would run it again: \(h.written)")
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        let end = h.written.compactMap { if case let .transition(t) = $0 { t } else { nil } }.last
        #expect(end?.to == .failure && end?.detail.reason == "timeout", "\(String(describing: end))")
        // A second cancel of a run whose cancel is written already writes nothing more.
        var twice = try Self.loading(Self.restarting)
        twice.on(.cancel(2, .run(1), by: 42))
        twice.on(.cancel(3, .run(1), by: 43))
        #expect(Self.stopsAsked(twice).isEmpty)
    }

    @Test("a replace of a loading run writes the replace down")
    func replaceWritten() throws {
        var h = try Self.loading(ConductorStateTests.replacing)
        h.trigger(2, ConductorStateTests.replacing)
        var asked = Self.stopsAsked(h)
        try h.commitStarting()
        asked += Self.stopsAsked(h)
        #expect(asked == [.stopAsked(runID: 1, .replaced(by: 2))], "\(h.written)")
    }

    static func unfinished(_ phase: Phase, stop: RunMachine.Stop?) -> UnfinishedRun {
        var run = RunSnapshot(id: 1, action: "b", key: "b", phase: phase, policy: .reject, params: [:], trigger: nil, queuedAt: now)
        run.startedAt = now
        run.attempts = 1
        var unfinished = UnfinishedRun(run: run, lastSeq: 2, pgid: 42, pgidIdentity: "x")
        unfinished.stop = stop
        return unfinished
    }

    @Test("recovery: a cancelled run of a restarting action ends cancelled as asked, never launched; without the stop it restarts")
    func recoveredCancel() throws {
        var h = H()
        h.on(.recover(1, [RecoveredRun(Self.unfinished(.loading, stop: .cancelled(by: 42)), action: Self.restarting)]))
        let ended = h.written.compactMap { if case let .transition(t) = $0 { t } else { nil } }
        #expect(ended.map(\.to) == [.cancelled] && ended.first?.detail.reason == "cancelled" && ended.first?.detail.by == 42, "\(ended)")
        #expect(h.launches.isEmpty)

        var plain = H()
        plain.on(.recover(1, [RecoveredRun(Self.unfinished(.loading, stop: nil), action: Self.restarting)]))
        #expect(plain.phases.first == .queued, "the same run without its stop restarts: \(plain.phases)")
    }

    @Test("recovery: a survivor whose cancel was written down is adopted, then stopped as asked, and ends cancelled")
    func survivorStopped() throws {
        var h = H()
        var recovered = RecoveredRun(Self.unfinished(.loading, stop: .cancelled(by: 42)), action: Self.restarting)
        recovered.surviving = SurvivingAttempt(attempt: 1, directory: "/x", pid: 42, identity: "x", alive: true, outputTotal: 0)
        h.on(.recover(1, [recovered]))
        #expect(h.launches == [1], "attached to")
        let attach = try #require(h.effects.firstIndex { if case .launch = $0 { true } else { false } })
        let stop = try #require(h.effects.firstIndex(of: .stop(run: 1, grace: .seconds(5))), "not stopped: \(h.effects)")
        #expect(attach < stop, "stopped after it is attached to")
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .killed(signal: 15))))
        let end = h.written.compactMap { if case let .transition(t) = $0 { t } else { nil } }.last
        #expect(end?.to == .cancelled && end?.detail.reason == "cancelled" && end?.detail.by == 42, "\(String(describing: end))")
    }
}
