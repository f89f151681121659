@testable import BatonEngine
import Testing

/// A trigger batch decided once (`KeyDecision.batch`), its new runs numbered after
/// (`Batch.Draft.taking`): the draft ids sort as the store's would (after every run the rows
/// hold, in the order made), and every place the decision names a new run is numbered, the ends
/// its stops record included.
@Suite("KeyDecision.batch: decided once, numbered after")
struct KeyBatchDraftTests {
    static let now = KeyBatchTableTests.now
    static let me = KeyBatchTableTests.me

    static func entry(_ key: String, _ policy: Policy = .reject, _ action: Action = KeyBatchTableTests.action()) -> KeyDecision.Batch.Entry {
        KeyBatchTableTests.entry(key, policy, action)
    }

    @Test("a draft asks one id per run it makes, and is numbered in the order they were made")
    func ids() {
        let draft = KeyDecision.batch([Self.entry("a"), Self.entry("a"), Self.entry("b"), Self.entry("a", .queue)], KeyDecision.Batch.Rows(now: Self.now),
                                      me: Self.me, fingerprint: \.fingerprint)
        #expect(draft.ids == 3)
        let decided = draft.taking([40, 41, 42])
        #expect(decided.outcomes == [.created(.created(40), window: nil), .shared(.rejected(40, line: nil)), .created(.created(41), window: nil),
                                     .created(.followUp(42, after: 40), window: nil)])
        #expect(decided.slots == ["a": KeySlot(holder: 40, line: [42]), "b": KeySlot(holder: 41)])
        #expect(decided.starts == [40, 41])
        #expect(Set(decided.definitions.keys) == [40, 41, 42])
    }

    @Test("a replace of a run the batch made: its end, numbered, names the run that replaced it")
    func replaceOfANewRun() {
        let decided = KeyBatchTableTests.batch([Self.entry("k", .queue), Self.entry("k", .replace)], KeyDecision.Batch.Rows(now: Self.now))
        let stop = RunMachine.Stop.replaced(by: 101)
        let end = Transition(runID: 100, seq: 2, from: .queued, to: .cancelled, at: Self.now, detail: stop.detail)
        #expect(decided.outcomes == [.created(.created(100), window: nil), .created(.replaced(101, stopping: [100]), window: nil)])
        #expect(decided.stops == [1: [RunStop(run: 100, stop: stop, decision: .ends(end))]])
        #expect(decided.stops[1]?.first?.end?.detail.error == "replaced by run 101")
        #expect(decided.slots == ["k": KeySlot(holder: 101)])
        #expect(decided.starts == [101])
    }

    /// Every stop a queued run can take, with a run it may name.
    static let stops: [RunMachine.Stop] = [.cancelled(by: 1000, principal: nil), .replaced(by: Batch.Draft.first + 1), .timeout(after: .seconds(5)),
                                           .shutdown, .needs("build failed"), .denied(by: "ops", reason: nil), .approvalTimedOut(after: .seconds(60))]
    typealias Batch = KeyDecision.Batch

    @Test("a queued run's end records its stop's own detail (what numbering a stop's end makes again)", arguments: stops)
    func queuedEndDetail(_ stop: RunMachine.Stop) {
        guard case let .ends(end) = StopDecision.decide(stop, run: 7, phase: .queued, lastSeq: 1, ownedHere: false, at: Self.now) else {
            Issue.record("a queued run's stop ends it")
            return
        }
        #expect(end.detail == stop.detail)
    }

    @Test("numbering a stop keeps its end as decided (phases, seq, time), numbering only its run and the run its detail names", arguments: stops)
    func numberedEnd(_ stop: RunMachine.Stop) {
        // An end the stop alone would not make (a failure, a later seq): what a decision on more
        // facts could record; numbering must not decide it again.
        let end = Transition(runID: Batch.Draft.first, seq: 9, from: .queued, to: .failure, at: Self.now + .seconds(3), detail: stop.detail)
        var decided = Batch.Decided()
        decided.stops = [0: [RunStop(run: Batch.Draft.first, stop: stop, decision: .ends(end))]]
        let draft = Batch.Draft(decided, ids: 2)
        let numbered = draft.taking([70, 71]).stops[0]?.first
        var stopNumbered = stop
        if case .replaced = stop { stopNumbered = .replaced(by: 71) }
        #expect(numbered == RunStop(run: 70, stop: stopNumbered,
                                    decision: .ends(Transition(runID: 70, seq: 9, from: .queued, to: .failure, at: Self.now + .seconds(3), detail: stopNumbered.detail))))
    }

    @Test("a delivery seen earlier in the batch: the refusal names the run the batch made for it")
    func deliveredRefusal() {
        var first = Self.entry("k", .join)
        first.trigger.delivery = Delivery(hook: "gh", id: "d1")
        var again = Self.entry("j", .join)
        again.trigger.delivery = Delivery(hook: "gh", id: "d1")
        let decided = KeyBatchTableTests.batch([first, again], KeyDecision.Batch.Rows(now: Self.now))
        #expect(decided.outcomes == [.created(.created(100), window: nil), .refused(.delivered(run: 100, hook: "gh", delivery: "d1"))])
    }

    @Test("a new run's rate start counts the bucket's older held runs ahead of it, as the store's ids (taken after the rows) are younger")
    func youngerThanTheRows() {
        let action = KeyBatchTableTests.limited(.delay, runs: 2)
        var rows = KeyDecision.Batch.Rows(now: Self.now)
        rows.rates["action deploy"] = RateBucket(starts: [Self.now + .seconds(-30)], waiting: [50: .init(key: "x", until: Self.now + .seconds(30))])
        let decided = KeyBatchTableTests.batch([Self.entry("a", .reject, action)], rows)
        #expect(decided.outcomes == [KeyBatchTableTests.made(100)])
        #expect(decided.starts == [], "held behind run 50, held before it")
    }

    @Test("a cooldown in a batch: a key within its window runs nothing, another key's run starts, a key past it runs")
    func cooldown() {
        let action = KeyBatchTableTests.action { $0.cooldown = .seconds(60) }
        var rows = KeyDecision.Batch.Rows(now: Self.now)
        rows.lastSuccess["a"] = KeyDecision.LastSuccess(run: 5, at: Self.now + .seconds(-10))
        rows.lastSuccess["c"] = KeyDecision.LastSuccess(run: 6, at: Self.now + .seconds(-60))
        let decided = KeyBatchTableTests.batch([Self.entry("a", .reject, action), Self.entry("b", .reject, action), Self.entry("c", .reject, action)], rows)
        #expect(decided.outcomes == [.shared(.cooled(5)), KeyBatchTableTests.made(100), KeyBatchTableTests.made(101)])
        #expect(decided.starts == [100, 101])
    }
}
