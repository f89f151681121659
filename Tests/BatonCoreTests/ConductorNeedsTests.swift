@testable import BatonCore
@testable import BatonEngine
import Testing

/// Runs that need other runs (issue 40, item 2) in the conductor's state: a run of an action with
/// `needs` triggers each needed action under `join`, waits queued, starts once all its needed
/// runs succeeded, and ends `failure` without starting when one did not; the relation is written
/// with the run; recovery decides a waiting run from how its needed runs are now.
@Suite("Conductor: needs")
struct ConductorNeedsTests {
    typealias Rig = ConductorDebounceTests.Rig

    static let a = Action(name: "a", exec: ["true"])
    static let b = Action(name: "b", exec: ["true"])

    static func needing(_ needs: [Action], name: String = "c", policy: Policy = .reject) -> Action {
        var action = Action(name: name, exec: ["true"], policy: policy)
        action.needs = needs.map { NeedTarget(action: $0, params: [:]) }
        return action
    }

    static func needs(_ rig: Rig, of run: Int64) -> [NeededRun]? {
        for case let .needs(id, needed) in rig.written where id == run { return needed }
        return nil
    }

    static func ended(_ rig: Rig, _ run: Int64) -> Transition? {
        for case let .transition(transition) in rig.written where transition.runID == run && transition.to.isTerminal { return transition }
        return nil
    }

    @Test("c needs a and b: the trigger makes c, a and b (the relation written with them); c waits, told what for, and starts only once both succeeded")
    func startsAfterAll() {
        var rig = Rig()
        let token = rig.trigger(Self.needing([Self.a, Self.b]), at: 0)
        #expect(rig.decision(token) == .created(1))
        #expect(rig.launched == [2, 3], "a and b start; c waits")
        #expect(Self.needs(rig, of: 1) == [NeededRun(action: "a", run: 2, phase: .queued), NeededRun(action: "b", run: 3, phase: .queued)])
        #expect(rig.state.snapshot(of: 1)?.needs?.map(\.text) == ["a run 2", "b run 3"])
        #expect(rig.state.snapshot(of: 1)?.needs?.map(\.phase) == [.loading, .loading])
        #expect(rig.state.snapshot(of: 2)?.via == "needed by c run 1")
        rig.exit(2, at: 1)
        #expect(rig.launched == [2, 3], "b has not succeeded yet")
        #expect(rig.state.snapshot(of: 1)?.needs?.map(\.phase) == [.success, .loading])
        rig.exit(3, at: 2)
        #expect(rig.launched == [2, 3, 1])
        rig.exit(1, at: 3)
        #expect(rig.state.inFlight.isEmpty && rig.state.needBook.waits.isEmpty)
    }

    @Test("each move of a needed run tells the waiting run (an update without a transition), with its needs as they are now")
    func waitingToldOfMoves() {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a, Self.b]), at: 0)
        func told() -> [[Phase]] {
            rig.published.filter { $0.run.id == 1 && $0.transition == nil }.map { $0.run.needs?.map(\.phase) ?? [] }
        }
        #expect(told().last == [.loading, .loading], "a and b started: told \(told())")
        rig.exit(2, at: 1)
        #expect(told().last == [.success, .loading], "a succeeded")
        let before = rig.published.count
        rig.exit(3, at: 2)
        #expect(rig.published[before...].contains { $0.run.id == 1 && $0.transition?.to == .loading }, "c starts: told by its own transition")
    }

    @Test("a needed run fails: c ends failure without starting, naming a's run; b is not cancelled")
    func failureEndsWithoutStarting() throws {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a, Self.b]), at: 0)
        rig.exit(2, status: 1, at: 1)
        let end = try #require(Self.ended(rig, 1))
        #expect(end.to == .failure && end.detail.reason == "needs" && end.detail.error == "needs a: run 2 failed")
        #expect(!rig.launched.contains(1) && rig.stopped.isEmpty)
        #expect(rig.state.snapshot(of: 3)?.phase == .loading, "b runs on: it may serve others")
    }

    @Test("a needed run cancelled, timed out, replaced or gone from the history is said so")
    func wording() {
        #expect(NeededRun(action: "a", run: 4, phase: .cancelled, reason: "cancelled").failure == "needs a: run 4 was cancelled")
        #expect(NeededRun(action: "a", run: 4, phase: .cancelled, reason: "replaced").failure == "needs a: run 4 was replaced")
        #expect(NeededRun(action: "a", run: 4, phase: .failure, reason: "interrupted").failure == "needs a: run 4 was interrupted")
        #expect(NeededRun(action: "a", run: 4, phase: .failure, reason: "timeout").failure == "needs a: run 4 timed out")
        #expect(NeededRun(action: "a", run: 4, phase: .cancelled, reason: "shutdown").failure == "needs a: run 4 was stopped by batond's shutdown")
        #expect(NeededRun(action: "a", run: 4, phase: .cancelled, reason: "pruned").failure
            == "needs a: run 4 is gone from the history (retention removed it)")
        #expect(NeededRun(action: "a", run: 4, phase: .success).failure == nil)
        #expect(NeededRun(action: "a", run: 4, phase: .loading).failure == nil)
        var rig = Rig()
        rig.trigger(Self.needing([Self.a]), at: 0)
        rig.handle(.cancel(90, .run(2), by: 0))
        rig.exit(2, status: 143, at: 1)
        #expect(Self.ended(rig, 1)?.detail.error == "needs a: run 2 was cancelled" && !rig.launched.contains(1))
    }

    @Test("a needed action's run in flight is joined (recorded against it), not made again")
    func joinsInFlight() {
        var rig = Rig()
        rig.trigger(Self.a, at: 0)
        rig.trigger(Self.needing([Self.a, Self.b]), at: 1)
        #expect(rig.launched == [1, 3], "a's run 1 joined, b's run 3 made")
        #expect(rig.written.contains { if case let .trigger(record) = $0 { record.runID == 1 && record.decision == .joined && record.via == "needed by c run 2" } else { false } })
        rig.exit(3, at: 2)
        rig.exit(1, at: 3)
        #expect(rig.launched == [1, 3, 2])
    }

    @Test("the waiting run holds its key: its policy decides a second trigger meanwhile (reject: busy; join: shares it)")
    func holdsItsKey() {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a]), at: 0)
        let second = rig.trigger(Self.needing([Self.a]), at: 1)
        guard case let .failed(.busy(run, _, phase, _, _)) = rig.answers[second] else {
            Issue.record("expected busy, got \(String(describing: rig.answers[second]))")
            return
        }
        #expect(run == 1 && phase == .queued && rig.state.inFlight.map(\.id) == [1, 2])
        let joined = rig.trigger(Self.needing([Self.a], policy: .join), at: 2)
        #expect(rig.decision(joined) == .joined(1))
    }

    @Test("cancelling the waiting run leaves the runs it needs running; it never starts")
    func cancelWaiting() {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a]), at: 0)
        rig.handle(.cancel(90, .run(1), by: 0))
        #expect(Self.ended(rig, 1)?.to == .cancelled && rig.stopped.isEmpty)
        rig.exit(2, at: 1)
        #expect(rig.launched == [2] && rig.state.needBook.waits.isEmpty)
    }

    @Test("a needed run that itself needs another chains: a, then b, then c")
    func chains() {
        var rig = Rig()
        let b = Self.needing([Self.a], name: "b")
        rig.trigger(Self.needing([b]), at: 0)
        #expect(rig.launched == [3], "c is 1, b is 2, a is 3")
        rig.exit(3, at: 1)
        #expect(rig.launched == [3, 2])
        rig.exit(2, at: 2)
        #expect(rig.launched == [3, 2, 1])
    }

    /// `build`'s end hooks `notify`, which needs `build` on the same key: the need joins the run
    /// ending (still its key's holder until `.finish`), and reads its phase as recorded in the same
    /// end step, terminal already (issue 39's in-place `perform`; before, it read `loading` and waited).
    @Test("a hook's run that needs the run whose end fired it joins that run and is decided in its end step: started after a success, failed after a failure",
          arguments: [(Int32(0), Phase.success), (1, .failure)])
    func hookNeedsEndingRun(status: Int32, phase: Phase) throws {
        let plain = Action(name: "build", exec: ["true"], policy: .queue)
        var notify = Action(name: "notify", exec: ["true"], policy: .queue)
        notify.needs = [NeedTarget(action: plain, params: [:])]
        var build = plain
        build.hooks.targets = [.success: HookTarget(action: notify, params: [:]), .failure: HookTarget(action: notify, params: [:])]
        var rig = Rig()
        rig.trigger(build, at: 0)
        #expect(rig.launched == [1])
        rig.exit(1, status: status, at: 1)
        let needed = try #require(Self.needs(rig, of: 2))
        #expect(needed.map(\.run) == [1] && needed.map(\.phase) == [phase], "the need joined run 1 and saw its end: \(needed)")
        let made = rig.written.compactMap { if case let .created(run, _) = $0 { "\(run.action) \(run.id)" } else { nil } }
        #expect(made == ["build 1", "notify 2"], "no second run of build: \(made)")
        if phase == .success {
            #expect(rig.launched == [1, 2], "notify starts in run 1's end step")
        } else {
            let end = try #require(Self.ended(rig, 2))
            #expect(end.to == .failure && end.detail.error == "needs build: run 1 failed" && rig.launched == [1])
        }
        #expect(rig.state.needBook.waits.isEmpty, "nothing left waiting")
    }

    @Test("a needed action inside its cooldown is met by its last success; a paused one refuses the trigger")
    func cooledAndPaused() {
        var cooled = Self.a
        cooled.cooldown = .seconds(60)
        var rig = Rig()
        rig.trigger(cooled, at: 0)
        rig.exit(1, at: 1)
        rig.trigger(Self.needing([cooled]), at: 2)
        #expect(rig.launched == [1, 2], "the success of run 1 serves: c starts at once")

        var paused = Rig()
        paused.handle(.pause(80, ActionPause(action: "a", by: "ops", reason: "migrating", at: Rig.start)))
        let refused = paused.trigger(Self.needing([Self.a]), at: 1)
        #expect(paused.answers[refused] == .failed(.paused(ActionPause(action: "a", by: "ops", reason: "migrating", at: Rig.start))))
        #expect(paused.launched.isEmpty && paused.state.inFlight.isEmpty, "the trigger is refused: no run of c is made")
    }

    @Test("params pass through: {ref} of the needing run fills the needed run's param, and its key")
    func params() {
        var build = Action(name: "build", exec: ["true"], params: ["ref": ParamSpec()], keyParams: ["ref"])
        build.policy = .reject
        var deploy = Action(name: "deploy", exec: ["true"], params: ["ref": ParamSpec()])
        deploy.needs = [NeedTarget(action: build, params: ["ref": "v{ref}"])]
        var rig = Rig()
        rig.token += 1
        rig.handle(.trigger(rig.token, Trigger(action: deploy, key: "deploy", policy: .reject, params: ["ref": "1.2"], peer: nil)))
        #expect(rig.state.snapshot(of: 2)?.params == ["ref": "v1.2"] && rig.state.snapshot(of: 2)?.key == build.key(for: ["ref": "v1.2"]))
        #expect(NeedTarget.fill("{a}-{b}-{c}", with: ["a": "1", "b": "2"]) == "1-2-{c}")
        #expect(NeedTarget.references(in: "x{a}y{b}") == ["a", "b"])
    }

    @Test("fill replaces each {name} given, keeps one not given, and keeps an unmatched { and the text around it once",
          arguments: [
              ("plain", "plain"), ("{a}", "1"), ("v{a}", "v1"), ("{a}-{b}-{c}", "1-2-{c}"), ("v{1", "v{1"),
              ("x{a}y{", "x1y{"), ("{", "{"), ("}{a}", "}1"), ("{}", "{}"), ("a{b}c{a", "a2c{a"), ("{{a}}", "{{a}}"),
          ])
    func fill(template: String, expected: String) {
        #expect(NeedTarget.fill(template, with: ["a": "1", "b": "2"]) == expected)
    }

    @Test("recovery: a run left waiting waits again for the same runs; one whose needed run was interrupted fails; one whose needed runs succeeded meanwhile starts")
    func recovery() {
        func run(_ id: Int64, _ action: String, _ phase: Phase) -> RunSnapshot {
            RunSnapshot(id: id, action: action, key: action, phase: phase, policy: .reject, params: [:], trigger: nil, queuedAt: Rig.start)
        }
        let c = Self.needing([Self.a])
        var waiting = UnfinishedRun(run: run(1, "c", .queued), lastSeq: 1)
        waiting.needs = [NeededRun(action: "a", run: 2, phase: .queued)]
        var rig = Rig()
        rig.handle(.recover(1, [RecoveredRun(waiting, action: c), RecoveredRun(UnfinishedRun(run: run(2, "a", .queued), lastSeq: 1), action: Self.a)]))
        #expect(rig.launched == [2] && rig.state.snapshot(of: 1)?.needs?.map(\.text) == ["a run 2"])
        rig.exit(2, at: 1)
        #expect(rig.launched == [2, 1])

        var interrupted = Rig()
        interrupted.handle(.recover(1, [RecoveredRun(waiting, action: c), RecoveredRun(UnfinishedRun(run: run(2, "a", .loading), lastSeq: 2), action: Self.a)]))
        #expect(Self.ended(interrupted, 1)?.detail.error == "needs a: run 2 was interrupted" && interrupted.launched.isEmpty)

        var met = waiting
        met.needs = [NeededRun(action: "a", run: 2, phase: .success)]
        var done = Rig()
        done.handle(.recover(1, [RecoveredRun(met, action: c)]))
        #expect(done.launched == [1])
    }

    @Test("a shutdown stops the needed run: the waiting run stays queued (not failed), and the next batond triggers that need again, then starts it")
    func shutdown() {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a]), at: 0)
        rig.handle(.shutdown)
        rig.handle(.graceElapsed)
        rig.exit(2, status: 143, at: 1)
        #expect(Self.ended(rig, 2)?.detail.reason == "shutdown" && Self.ended(rig, 1) == nil, "c stays queued for the next start")

        var waiting = UnfinishedRun(run: rig.state.snapshot(of: 1)!, lastSeq: 1)
        waiting.needs = [NeededRun(action: "a", run: 2, phase: .cancelled, reason: "shutdown")]
        var next = Rig()
        next.state.reserveIDs(from: 3)
        next.handle(.recover(1, [RecoveredRun(waiting, action: Self.needing([Self.a]))]))
        #expect(next.launched == [3], "a is triggered again (run 3); c waits for it")
        #expect(Self.needs(next, of: 1) == [NeededRun(action: "a", run: 3, phase: .queued)], "the relation is rewritten")
        next.exit(3, at: 2)
        #expect(next.launched == [3, 1])
    }

    @Test("a need a shutdown stopped, asked again at the next start and refused there (its action paused now): the waiting run ends failure naming the need and the pause, never started, and keeps the relation (review-fleetrecovery9, 11)")
    func shutdownThenPaused() {
        var rig = Rig()
        rig.trigger(Self.needing([Self.a]), at: 0)
        rig.handle(.shutdown)
        rig.handle(.graceElapsed)
        rig.exit(2, status: 143, at: 1)
        var waiting = UnfinishedRun(run: rig.state.snapshot(of: 1)!, lastSeq: 1)
        waiting.needs = [NeededRun(action: "a", run: 2, phase: .cancelled, reason: "shutdown")]
        var next = Rig()
        next.handle(.pause(80, ActionPause(action: "a", by: "ops", reason: "migrating", at: Rig.start)))
        next.state.reserveIDs(from: 3)
        next.handle(.recover(1, [RecoveredRun(waiting, action: Self.needing([Self.a]))]))
        #expect(next.launched.isEmpty, "neither a nor c runs")
        let ended = Self.ended(next, 1)
        #expect(ended?.to == .failure && ended?.detail.error?.contains("needs a: a is paused by ops") == true, "\(String(describing: ended))")
        #expect(Self.needs(next, of: 1) == waiting.needs, "the runs it waited for stay in its relation")
    }
}
