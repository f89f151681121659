@testable import BatonEngine
import Testing

/// The engine's entries a store that keeps its keys in rows (the fleet) calls, one per step
/// (a host's triggers too, through its flights), stated as tables without PostgreSQL: the view of
/// a key from its facts (`KeyDecision.view`), a decision that asks a new run's id only when it
/// makes one (`KeyDecision.decide` on `KeyFacts`), a new run's start (`StartView.newRun`,
/// `KeyDecision.admitStart`), a stop on a run's facts (`StopDecision.decide(_:run:_:me:slot:at:)`)
/// and what its end leaves (`KeyFacts.ended`), and a bucket's rate (`RateBucket.rate`, the rule a
/// host's `FlightTable.rate` answers with too).
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
        for (id, phase) in row.runs { facts.runs[id] = KeyFacts.Run(phase: phase, lastSeq: 1) }
        for id in row.windows { facts.windows[id] = Self.window() }
        let view = KeyDecision.view(facts)
        #expect(view.pending?.run == row.expected)
    }

    @Test("a schedule slot's run has ended unless it is read not terminal",
          arguments: [(Phase?.none, true), (.queued, false), (.loading, false), (.success, true), (.cancelled, true)])
    func slotRun(phase: Phase?, ended: Bool) {
        var facts = KeyFacts(slot: KeySlot(), now: Self.now, slotRun: 4)
        if let phase { facts.runs[4] = KeyFacts.Run(phase: phase, lastSeq: 1) }
        #expect(KeyDecision.view(facts).slotRun == KeyDecision.SlotRun(run: 4, ended: ended))
    }

    @Test("the line's params and the runs' definitions as read; the rest passed through")
    func passedThrough() {
        let success = KeyDecision.LastSuccess(run: 2, at: Timestamp(rawValue: 1))
        let pause = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: Timestamp(rawValue: 1))
        var facts = KeyFacts(slot: KeySlot(holder: 5, line: [6, 7]), now: Self.now, delivered: 3, lastSuccess: success, pause: pause)
        facts.runs[5] = KeyFacts.Run(phase: .loading, lastSeq: 2, definition: "abc", host: "web-2", params: ["a": "0"])
        facts.runs[6] = KeyFacts.Run(phase: .queued, lastSeq: 1, params: ["a": "1"])
        let view = KeyDecision.view(facts)
        #expect(view.lineParams == [6: ["a": "1"]])
        #expect(view.definitions == [5: KeyDecision.Definition(fingerprint: "abc", host: "web-2")])
        #expect(view.delivered == 3 && view.lastSuccess == success && view.paused == pause && view.now == Self.now)
        #expect(view.rate == nil && view.uptime == nil)
    }

    @Test("the action's pause as the store kept it: the view holds it only while it holds at the facts' clock, a trigger then refused (a held pause queues)",
          arguments: [(until: nil, hold: false, refused: true), (until: 100_000_001, hold: false, refused: true),
                      (until: 100_000_000, hold: false, refused: false), (until: 99_000_000, hold: false, refused: false),
                      (until: nil, hold: true, refused: false)] as [(until: Int64?, hold: Bool, refused: Bool)])
    func pauseAsKept(until: Int64?, hold: Bool, refused: Bool) {
        let pause = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: Timestamp(rawValue: 1),
                                until: until.map(Timestamp.init(rawValue:)), hold: hold)
        let facts = KeyFacts(slot: KeySlot(), now: Self.now, pause: pause)
        let holds = until.map { Self.now.rawValue < $0 } ?? true
        #expect(KeyDecision.view(facts).paused == (holds ? pause : nil))
        var slot = KeySlot()
        let decided = KeyDecision.decide(KeyDecision.Asked(hook: Self.action()), facts, slot: &slot, candidate: { 9 })
        #expect(decided == (refused ? .paused(pause, skipped: false) : .created(.created(9), window: nil)), "\(decided)")
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

    /// An action-wide bucket of two starts in 10 s, started at 91 and 99 s: in a host's table and a fleet's bucket.
    static func startedTwice() -> (RateClaim, FlightTable, RateBucket) {
        let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 2, per: .seconds(10), scope: .action))
        var table = FlightTable(limit: 4)
        var bucket = RateBucket()
        for start in [Timestamp(rawValue: 91_000_000), Timestamp(rawValue: 99_000_000)] {
            table.rememberStart(claim, at: start)
            bucket.starts.append(start)
        }
        return (claim, table, bucket)
    }

    @Test("a host's table and a fleet's bucket answer the same rate for the same starts and waiting runs")
    func rateBothWays() {
        let (claim, table, bucket) = Self.startedTwice()
        #expect(table.rate(claim, key: "k", at: Self.now) == bucket.rate(claim, key: "k", at: Self.now))
        #expect(table.rate(claim, key: "k", at: Self.now).next == Timestamp(rawValue: 101_000_000))
    }

    /// Runs made but not started in one bucket: two of key `k`, one of key `other`.
    static let queued: [(run: Int64, key: String)] = [(8, "k"), (9, "other"), (10, "k")]

    @Test("with runs waiting for the same key and another: a host's table and a fleet's bucket answer alike; a replace waits behind other keys' only",
          arguments: [("k", Int64?.some(119_000_000), Int64?.some(109_000_000)),      // a replace behind run 9 only
                      ("other", 119_000_000, 111_000_000),                           // behind runs 8 and 10
                      ("third", 119_000_000, 119_000_000)])                          // behind all three, as any start
    func rateWaitingBothWays(key: String, next: Int64?, nextReplacing: Int64?) {
        var (claim, table, bucket) = Self.startedTwice()
        for (run, key) in Self.queued {
            table.apply(.created(run), key: key, slot: KeySlot(holder: run), action: "deploy", rate: claim)
            bucket.waiting[run] = .init(key: key)
        }
        let host = table.rate(claim, key: key, at: Self.now)
        #expect(host == bucket.rate(claim, key: key, at: Self.now))
        #expect(host.next == next.map(Timestamp.init(rawValue:)))
        #expect(host.nextReplacing == nextReplacing.map(Timestamp.init(rawValue:)))
    }

    @Test("a debounced trigger joins the pending run and pushes its window to min(now + window, first + maxWait), never earlier",
          arguments: [
              (Int64(92_000_000), Int64(95_000_000), Int64(97_000_000)),  // inside the window: now + 5 s
              (94_999_999, 95_000_000, 99_999_999),                       // one µs before it is due: now + 5 s
              (139_000_000, 95_000_000, 140_000_000),                     // capped by first + maxWait (140 s)
              (150_000_000, 140_000_000, 140_000_000),                    // due already, at the cap: stays
              (80_000_000, 95_000_000, 95_000_000),                       // a clock read before the window's own: never earlier
          ])
    func debounced(now: Int64, until: Int64, pushed: Int64) {
        let action = Self.action { $0.debounce = .seconds(5); $0.maxWait = .seconds(50) }
        let window = DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: 90_000_000),
                                    deadline: Timestamp(rawValue: until))
        let facts = KeyFacts(slot: KeySlot(holder: 7), now: Timestamp(rawValue: now), runs: [7: .init(phase: .queued, lastSeq: 1)], windows: [7: window])
        var slot = facts.slot
        let decided = KeyDecision.decide(KeyDecision.Asked(hook: action), facts, slot: &slot, candidate: { 9 },
                                         fingerprint: { action.fingerprint })
        guard case let .debounced(run, window) = decided else { Issue.record("not debounced: \(decided)"); return }
        #expect(run == 7 && window.deadline == Timestamp(rawValue: pushed))
    }

    struct NoID: Error {}

    @Test("a trigger's id is asked only where it makes a run, and a failure to give one is the decision's; an action with secrets never joins its line by params",
          arguments: [(false, false), (true, true)])
    func candidateAsked(secret: Bool, makes: Bool) throws {
        let action = Self.action {
            $0.policy = .queue
            $0.queueDepth = 3
            $0.params = ["a": ParamSpec(secret: secret)]
        }
        var facts = KeyFacts(slot: KeySlot(holder: 5, line: [6]), now: Self.now)
        facts.runs[6] = KeyFacts.Run(phase: .queued, lastSeq: 1, params: ["a": "***"])
        var asked = 0
        var slot = facts.slot
        let queued = try KeyDecision.decide(KeyDecision.Asked(action: action, policy: .queue, params: ["a": "***"]), facts, slot: &slot,
                                            candidate: { asked += 1; return 9 })
        #expect(asked == (makes ? 1 : 0))
        let run: Int64? = switch queued {
        case let .shared(decision), let .created(decision, _): decision.run
        default: nil
        }
        #expect(run == (makes ? 9 : 6))
        slot = facts.slot
        #expect(try KeyDecision.decide(KeyDecision.Asked(action: action, policy: .join), facts, slot: &slot, candidate: { throw NoID() }) == .shared(.joined(5)))
        slot = KeySlot()
        #expect(throws: NoID.self) {
            try KeyDecision.decide(KeyDecision.Asked(action: action, policy: .join), KeyFacts(slot: KeySlot(), now: Self.now), slot: &slot,
                                   candidate: { throw NoID() })
        }
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

    @Test("a stop of a run that has ended: nothing, its slot untouched",
          arguments: [Phase.success, .failure, .cancelled])
    func stopEnded(phase: Phase) {
        var slot = KeySlot(holder: 5, followUp: 6)
        #expect(StopDecision.decide(.replaced(by: 9), run: 5, KeyFacts.Run(phase: phase, lastSeq: 3, owner: "me"), me: "me", slot: &slot,
                                    at: Self.now) == StopDecision.none)
        #expect(slot == KeySlot(holder: 5, followUp: 6))
    }

    @Test("a new run starts only where the start rule lets it, its pause and rate as the store read them; its start then counts in its bucket")
    func admitStart() {
        let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 1, per: .seconds(10), scope: .action))
        let action = Self.action { $0.rateLimit = claim.limit }
        let bucketName = claim.bucket
        var buckets = [bucketName: RateBucket(waiting: [4: .init(key: "k"), 5: .init(key: "other")])]
        let start = { (run: Int64, slot: KeySlot, pause: ActionPause?, buckets: inout [String: RateBucket]) in
            KeyDecision.admitStart(run, of: action, key: "k", slot: slot, window: nil, pause: pause, buckets: &buckets, at: Self.now)
        }
        let held = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: Timestamp(rawValue: 1), hold: true)
        #expect(!start(4, KeySlot(holder: 4), held, &buckets), "a held pause")
        #expect(!start(4, KeySlot(holder: 3), nil, &buckets), "not its key's holder")
        #expect(buckets[bucketName]?.starts == [])
        #expect(start(4, KeySlot(holder: 4), nil, &buckets))
        #expect(buckets[bucketName] == RateBucket(starts: [Self.now], waiting: [5: .init(key: "other")]))
        #expect(!start(5, KeySlot(holder: 5), nil, &buckets), "the bucket's one start in its window is taken")
        #expect(buckets[bucketName]?.waiting[5]?.until == nil, "held back, a batch's new run keeps no hold in the bucket (keepsHold: false)")
    }

    @Test("a queued run a stop ended: read in its end's phase and seq, waiting in no bucket")
    func ended() {
        var runs: [Int64: KeyFacts.Run] = [7: KeyFacts.Run(phase: .queued, lastSeq: 1), 8: KeyFacts.Run(phase: .queued, lastSeq: 1)]
        var buckets = ["a": RateBucket(waiting: [7: .init(key: "k"), 8: .init(key: "k")]), "b": RateBucket(waiting: [7: .init(key: "k")])]
        let end = Transition(runID: 7, seq: 2, from: .queued, to: .cancelled, at: Self.now, detail: RunMachine.Stop.replaced(by: 9).detail)
        KeyFacts.ended(end, runs: &runs, buckets: &buckets)
        #expect(runs[7] == KeyFacts.Run(phase: .cancelled, lastSeq: 2) && runs[8] == KeyFacts.Run(phase: .queued, lastSeq: 1))
        #expect(buckets["a"]?.waiting == [8: .init(key: "k")] && buckets["b"]?.waiting == [:])
    }
}
