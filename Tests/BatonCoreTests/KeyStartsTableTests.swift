@testable import BatonEngine
import Testing

/// The engine's start batch (`KeyDecision.starts`, then `KeyDecision.decide`: the fleet's start
/// batch), stated as tables without PostgreSQL: rows as a store read them (each window's
/// deadline, pause and rate hold as kept, the clock the row was read with), the plan the rule
/// answers (what the store reads before the rate limits), and the effects (rate holds, then starts).
@Suite("KeyDecision.starts and decide: one decision per start batch")
struct KeyStartsTableTests {
    static let now = Timestamp(rawValue: 100_000_000)
    static let me = "web-1/1/aa"
    static let minute = RateLimit(runs: 1, per: .seconds(60), scope: .action, over: .delay)
    static let claim = RateClaim(bucket: "action deploy", limit: minute)

    static func row(_ run: Int64, key holder: Int64? = nil, _ configure: (inout KeyDecision.Starts.Row) -> Void = { _ in }) -> KeyDecision.Starts.Row {
        var row = KeyDecision.Starts.Row(run: run, slot: KeySlot(holder: holder ?? run), owner: me, now: now)
        configure(&row)
        return row
    }

    /// The batch as a store runs it: the plan, then `buckets` read as it names them (none asked:
    /// none read), then the decision on them; the plan and the effects.
    static func starts(_ rows: [KeyDecision.Starts.Row], buckets: [String: RateBucket] = [:], clock: Timestamp = now)
        -> (plan: KeyDecision.Starts.Plan, effects: [KeyDecision.Starts.Effect]) {
        let plan = KeyDecision.starts(rows, me: me)
        let read = plan.buckets.isEmpty ? nil : KeyDecision.Starts.Buckets(now: clock, buckets: buckets.filter { plan.buckets[$0.key] != nil })
        return (plan, KeyDecision.decide(plan, read))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var rows: [KeyDecision.Starts.Row]
        var buckets: [String: RateBucket] = [:]
        /// The buckets the plan names (the store reads these, and only these, before `decide`).
        var asked: [String] = []
        var effects: [KeyDecision.Starts.Effect]
        var testDescription: String { name }
    }

    static let pause = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: now + .seconds(-10))

    static let cases: [Case] = [
        Case(name: "two keys, both free: both start, in the rows' order",
             rows: [row(9), row(4)], effects: [.start(9), .start(4)]),
        Case(name: "a run that does not hold its key, or whose key still drains, waits; the other key's starts",
             rows: [row(5, key: 4), row(6) { $0.slot.draining = [3] }, row(7)], effects: [.start(7)]),
        Case(name: "a paused action's run waits, a held pause's too; a pause whose time ran out holds nothing",
             rows: [row(1) { $0.pause = pause }, row(2) { $0.pause = pause; $0.pause?.hold = true },
                    row(3) { $0.pause = pause; $0.pause?.until = now }],
             effects: [.start(3)]),
        Case(name: "a debounce window not yet over waits; one over at the clock starts; another host's run's window never passes here",
             rows: [row(1) { $0.window = now + .microseconds(1) }, row(2) { $0.window = now }, row(3) { $0.window = now + .seconds(-5) },
                    row(4) { $0.owner = "web-2/1/bb" }],
             effects: [.start(2), .start(3)]),
        Case(name: "a rate hold not yet over waits (its bucket not asked); one over at the clock starts",
             rows: [row(1) { $0.rateUntil = now + .microseconds(1); $0.rate = RateClaim(bucket: "key held", limit: minute) },
                    row(2) { $0.rateUntil = now }],
             buckets: ["key held": RateBucket()], effects: [.start(2)]),
        Case(name: "waiting for an approval or its needs waits; a need failed ends it; neither starts",
             rows: [row(1) { $0.approving = true }, row(2) { $0.needs = .waiting }, row(3) { $0.needs = .failed },
                    row(4) { $0.phase = .loading }, row(5)],
             effects: [.start(5)]),
        Case(name: "one bucket of one a minute: the oldest starts, the younger are held behind it and each other (oldest first)",
             rows: [row(12) { $0.rate = claim }, row(10) { $0.rate = claim }, row(11) { $0.rate = claim }],
             buckets: [claim.bucket: RateBucket(waiting: [10: .init(key: "a"), 11: .init(key: "b"), 12: .init(key: "c")])], asked: [claim.bucket],
             effects: [.holdRate(run: 11, until: now + .seconds(60)), .holdRate(run: 12, until: now + .seconds(120)), .start(10)]),
        Case(name: "a bucket whose minute has its start: held until it leaves the window; a run that started before is not held again",
             rows: [row(1) { $0.rate = claim }, row(2) { $0.rate = claim; $0.startedBefore = true }],
             buckets: [claim.bucket: RateBucket(starts: [now + .seconds(-20)], waiting: [1: .init(key: "a")])], asked: [claim.bucket],
             effects: [.holdRate(run: 1, until: now + .seconds(40)), .start(2)]),
        Case(name: "per-key buckets: two keys each start; a paused run's bucket is not asked",
             rows: [row(1) { $0.rate = RateClaim(bucket: "key a", limit: minute) }, row(2) { $0.rate = RateClaim(bucket: "key b", limit: minute) },
                    row(3) { $0.rate = RateClaim(bucket: "key c", limit: minute); $0.pause = pause }],
             buckets: ["key a": RateBucket(), "key b": RateBucket(), "key c": RateBucket(starts: [now])], asked: ["key a", "key b"],
             effects: [.start(1), .start(2)]),
    ]

    @Test("a start batch: the buckets its plan asks, what starts, what a rate limit holds, what waits", arguments: cases)
    func table(_ row: Case) {
        let (plan, effects) = Self.starts(row.rows, buckets: row.buckets)
        #expect(plan.buckets.keys.sorted() == row.asked)
        #expect(effects == row.effects)
    }

    @Test("the plan names the runs the rule lets start (their locks first) and one run of each bucket they count against; nothing when none may start")
    func plan() {
        let paused = RateClaim(bucket: "key paused", limit: Self.minute)
        let rows = [Self.row(3) { $0.rate = Self.claim }, Self.row(1), Self.row(2) { $0.pause = Self.pause; $0.rate = paused },
                    Self.row(4) { $0.rate = Self.claim }]
        let plan = Self.starts(rows, buckets: [Self.claim.bucket: RateBucket(), paused.bucket: RateBucket()]).plan
        #expect(plan.ready == [3, 1, 4])
        #expect(plan.rows == [rows[0], rows[1], rows[3]], "the rows the rule chose, decided on as they are")
        #expect(plan.buckets.keys.sorted() == [Self.claim.bucket], "the paused run's bucket is not read")
        let none = Self.starts([Self.row(2) { $0.pause = Self.pause }]).plan
        #expect(none.ready.isEmpty && none.buckets.isEmpty)
        #expect(Self.starts([Self.row(2) { $0.rate = Self.claim; $0.startedBefore = true }]).plan.buckets.isEmpty,
                "a run that started before asks no bucket")
    }

    @Test("decide takes the plan's runs as chosen and reads only the buckets given: none read, none held")
    func decideOnThePlan() {
        let rows = [Self.row(2) { $0.rate = Self.claim }, Self.row(1) { $0.rate = Self.claim }]
        let plan = KeyDecision.starts(rows, me: Self.me)
        #expect(KeyDecision.decide(plan, nil) == [.start(2), .start(1)])
        let full = RateBucket(starts: [Self.now], waiting: [1: .init(key: "a"), 2: .init(key: "b")])
        #expect(KeyDecision.decide(plan, KeyDecision.Starts.Buckets(now: Self.now, buckets: [Self.claim.bucket: full]))
                == [.holdRate(run: 1, until: Self.now + .seconds(60)), .holdRate(run: 2, until: Self.now + .seconds(120))])
    }

    @Test("the rate limits are decided on the clock read with the buckets, the rest on each row's own")
    func clocks() {
        let later = Self.now + .seconds(30)
        let rows = [Self.row(1) { $0.rate = Self.claim }]
        let bucket = RateBucket(starts: [Self.now + .seconds(-40)], waiting: [1: .init(key: "a")])
        #expect(Self.starts(rows, buckets: [Self.claim.bucket: bucket]).effects == [.holdRate(run: 1, until: Self.now + .seconds(20))])
        #expect(Self.starts(rows, buckets: [Self.claim.bucket: bucket], clock: later).effects == [.start(1)])
    }

    @Test("a window's deadline, as a store keeps it, has passed at it and after, not a microsecond before; the host's window (isOpen) the same")
    func windowRule() {
        let window = DebounceWindow(window: .seconds(5), maxWait: .seconds(60), first: Self.now)
        let deadline = Self.now + .seconds(5)
        #expect(window.deadline == deadline)
        #expect(DebounceWindow.passed(deadline: deadline, at: deadline))
        #expect(DebounceWindow.passed(deadline: deadline, at: deadline + .microseconds(1)))
        #expect(!DebounceWindow.passed(deadline: deadline, at: deadline + .microseconds(-1)))
        #expect(!DebounceWindow.passed(deadline: deadline, at: Self.now))
        #expect(DebounceWindow.passed(deadline: nil, at: Self.now), "no window: nothing to wait for")
        #expect(!window.isOpen(at: deadline), "a host's run starts at its deadline (ConductorState+Debounce asks isOpen)")
        #expect(window.isOpen(at: deadline + .microseconds(-1)))
        #expect(DebounceWindow.left(deadline: deadline, at: Self.now) == .seconds(5), "what a fleet host's wake-up timer waits")
        #expect(DebounceWindow.left(deadline: deadline, at: deadline + .microseconds(-1)) == .microseconds(1))
        #expect(DebounceWindow.left(deadline: deadline, at: deadline) == nil)
    }
}
