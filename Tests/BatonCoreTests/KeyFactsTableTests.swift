@testable import BatonEngine
import Testing

/// The engine's entries a store that keeps its keys in rows (the fleet) calls, one per step
/// (a host's triggers too, through its flights), stated as tables without PostgreSQL: the view of
/// a key from its facts (`KeyDecision.view`), whether a trigger needs an id
/// (`KeyDecision.makesRun`), a new run's start (`StartView.newRun`), a stop on a run's facts (`StopDecision.decide(_:run:_:me:slot:at:)`) and a bucket's rate
/// (`RateBucket.rate`, the rule a host's `FlightTable.rate` answers with too).
@Suite("KeyFacts: one engine entry per step of a store that reads rows")
struct KeyFactsTableTests {
    static let now = Timestamp(rawValue: 100_000_000)

    static func action(_ configure: (inout Action) -> Void = { _ in }) -> Action {
        var action = Action(name: "deploy", exec: ["true"])
        configure(&action)
        return action
    }

    static func window(first: Int64 = 90_000_000) -> DebounceWindow {
        DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: first))
    }

    struct PendingCase: Sendable, CustomTestStringConvertible {
        var name: String
        var slot: KeySlot
        var runs: [Int64: Phase] = [:]
        var windows: [Int64] = []
        var expected: Int64?
        var testDescription: String { name }
    }

    static let pendingCases: [PendingCase] = [
        PendingCase(name: "the holder, queued with a window", slot: KeySlot(holder: 7), runs: [7: .queued], windows: [7], expected: 7),
        PendingCase(name: "a holder not read, with a window (a store that reads only windows): not started",
                    slot: KeySlot(holder: 7), windows: [7], expected: 7),
        PendingCase(name: "the holder loads: its follow-up", slot: KeySlot(holder: 7, followUp: 8), runs: [7: .loading, 8: .queued],
                    windows: [7, 8], expected: 8),
        PendingCase(name: "the holder before the follow-up", slot: KeySlot(holder: 7, followUp: 8), windows: [7, 8], expected: 7),
        PendingCase(name: "being replaced: not shared", slot: KeySlot(holder: 7, draining: [7]), windows: [7]),
        PendingCase(name: "no window: none", slot: KeySlot(holder: 7), runs: [7: .queued]),
        PendingCase(name: "a window of a run the slot does not hold: none", slot: KeySlot(holder: 7), windows: [9]),
        PendingCase(name: "a run read as ended keeps no pending window", slot: KeySlot(holder: 7), runs: [7: .cancelled], windows: [7]),
    ]

    @Test("the pending debounced run a trigger shares", arguments: pendingCases)
    func pending(_ row: PendingCase) {
        var facts = KeyFacts(slot: row.slot, now: Self.now)
        for (id, phase) in row.runs { facts.runs[id] = KeyFacts.Run(phase: phase) }
        for id in row.windows { facts.windows[id] = Self.window() }
        let view = KeyDecision.view(facts)
        #expect(view.pending?.run == row.expected)
    }

    @Test("a schedule slot's run has ended unless it is read not terminal",
          arguments: [(Phase?.none, true), (.queued, false), (.loading, false), (.success, true), (.cancelled, true)])
    func slotRun(phase: Phase?, ended: Bool) {
        var facts = KeyFacts(slot: KeySlot(), now: Self.now, slotRun: 4)
        if let phase { facts.runs[4] = KeyFacts.Run(phase: phase) }
        #expect(KeyDecision.view(facts).slotRun == KeyDecision.SlotRun(run: 4, ended: ended))
    }

    @Test("the line's params and the runs' definitions as read; the rest passed through")
    func passedThrough() {
        let success = KeyDecision.LastSuccess(run: 2, at: Timestamp(rawValue: 1))
        let pause = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: Timestamp(rawValue: 1))
        var facts = KeyFacts(slot: KeySlot(holder: 5, line: [6, 7]), now: Self.now, delivered: 3, lastSuccess: success, pause: pause)
        facts.runs[5] = KeyFacts.Run(phase: .loading, definition: "abc", host: "web-2", params: ["a": "0"])
        facts.runs[6] = KeyFacts.Run(phase: .queued, params: ["a": "1"])
        let view = KeyDecision.view(facts)
        #expect(view.lineParams == [6: ["a": "1"]])
        #expect(view.definitions == [5: KeyDecision.Definition(fingerprint: "abc", host: "web-2")])
        #expect(view.delivered == 3 && view.lastSuccess == success && view.paused == pause && view.now == Self.now)
        #expect(view.rate == nil && view.uptime == nil)
    }

    @Test("a bucket's rate: behind every run waiting; a replace behind other keys' only; a full window of waiting runs, a window from now")
    func rate() {
        let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 2, per: .seconds(10), scope: .action))
        let start = Timestamp(rawValue: 95_000_000)
        var bucket = RateBucket(starts: [start], waiting: [8: .init(key: "k")])
        #expect(bucket.rate(claim, key: "k", at: Self.now) == KeyDecision.Rate(limit: claim.limit, next: start + .seconds(10), nextReplacing: nil))
        bucket.waiting[9] = .init(key: "other")
        #expect(bucket.rate(claim, key: "k", at: Self.now).nextReplacing == start + .seconds(10))
        #expect(bucket.rate(claim, key: "k", at: start + .seconds(11)).next == Timestamp(rawValue: 116_000_000))
        let facts = KeyFacts(slot: KeySlot(), now: Self.now, rate: bucket.rate(claim, key: "k", at: Self.now))
        #expect(KeyDecision.view(facts).rate == facts.rate)
    }

    @Test("a host's table and a fleet's bucket answer the same rate for the same starts and waiting runs")
    func rateBothWays() {
        let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 2, per: .seconds(10), scope: .action))
        var table = FlightTable(limit: 4)
        var bucket = RateBucket()
        for start in [Timestamp(rawValue: 91_000_000), Timestamp(rawValue: 99_000_000)] {
            table.rememberStart(claim, at: start)
            bucket.starts.append(start)
        }
        #expect(table.rate(claim, key: "k", at: Self.now) == bucket.rate(claim, key: "k", at: Self.now))
        #expect(table.rate(claim, key: "k", at: Self.now).next == Timestamp(rawValue: 101_000_000))
    }

    @Test("a debounced trigger joins the pending run and pushes its window to min(now + window, first + maxWait), never earlier",
          arguments: [
              (Int64(92_000_000), Int64(97_000_000)),      // inside the window: now + 5 s
              (139_000_000, 140_000_000),                  // capped by first + maxWait (140 s)
              (80_000_000, 95_000_000),                    // a clock read before the window's own: never earlier
          ])
    func debounced(now: Int64, pushed: Int64) {
        let action = Self.action { $0.debounce = .seconds(5); $0.maxWait = .seconds(50) }
        let facts = KeyFacts(slot: KeySlot(holder: 7), now: Timestamp(rawValue: now), runs: [7: .init(phase: .queued)], windows: [7: Self.window()])
        var slot = facts.slot
        let decided = KeyDecision.decide(KeyDecision.Asked(hook: action), facts, slot: &slot, candidate: { 9 },
                                         fingerprint: { action.fingerprint })
        guard case let .debounced(run, window) = decided else { Issue.record("not debounced: \(decided)"); return }
        #expect(run == 7 && window.deadline == Timestamp(rawValue: pushed))
    }

    @Test("a trigger needs an id only where its policy may make a run; an action with secrets never joins its line by params",
          arguments: [(false, false), (true, true)])
    func makesRun(secret: Bool, makes: Bool) {
        let action = Self.action {
            $0.policy = .queue
            $0.queueDepth = 3
            $0.params = ["a": ParamSpec(secret: secret)]
        }
        var view = KeyDecision.View(slot: KeySlot(holder: 5, line: [6]), now: Self.now)
        view.lineParams[6] = ["a": "***"]
        #expect(KeyDecision.makesRun(KeyDecision.Asked(action: action, policy: .queue, params: ["a": "***"]), view) == makes)
        #expect(KeyDecision.makesRun(KeyDecision.Asked(action: action, policy: .join), view) == false)
        #expect(KeyDecision.makesRun(KeyDecision.Asked(action: action, policy: .join), KeyDecision.View(slot: KeySlot(), now: Self.now)))
    }

    @Test("a new run's start: its approval, then its needs, then its window hold it; else it starts")
    func newRun() {
        let slot = KeySlot(holder: 4)
        let approving = Self.action { $0.approve = ApprovalRule(by: ["ops"], approvers: .anyone) }
        let needing = Self.action { $0.needs = [NeedTarget(action: Self.action(), params: [:])] }
        let start = { (action: Action, window: DebounceWindow?, held: Bool) in
            KeyDecision.mayStart(.newRun(4, of: action, slot: slot, window: window, paused: false, rateHeld: held))
        }
        #expect(start(approving, nil, false) == .wait(.approval))
        #expect(start(needing, nil, false) == .wait(.needs))
        #expect(start(Self.action(), Self.window(), false) == .wait(.window))
        #expect(start(Self.action(), nil, true) == .wait(.rate))
        #expect(start(Self.action(), nil, false) == .start)
        #expect(KeyDecision.mayStart(.newRun(4, of: Self.action(), slot: KeySlot(holder: 3), window: nil, paused: false, rateHeld: false)) == .wait(.key))
    }

    @Test("a stop on a run's facts: a queued run ends and leaves the slot; a running one is its owner's; none, nothing",
          arguments: [(Phase.queued, "me", true), (.loading, "me", false), (.retrying, "other", false)])
    func stop(phase: Phase, owner: String, ends: Bool) throws {
        var slot = KeySlot(holder: 5, followUp: 6)
        let decision = try #require(StopDecision.decide(.replaced(by: 9), run: 5, KeyFacts.Run(phase: phase, lastSeq: 3, owner: owner), me: "me",
                                                        slot: &slot, at: Self.now))
        if ends {
            #expect(decision == .ends(Transition(runID: 5, seq: 4, from: .queued, to: .cancelled, at: Self.now,
                                                 detail: RunMachine.Stop.replaced(by: 9).detail)))
            #expect(slot == KeySlot(holder: 6))
        } else {
            #expect(decision == .owner(here: owner == "me"))
            #expect(slot == KeySlot(holder: 5, followUp: 6))
        }
        var untouched = KeySlot(holder: 5)
        #expect(StopDecision.decide(.replaced(by: 9), run: 5, nil, me: "me", slot: &untouched, at: Self.now) == nil)
    }
}
