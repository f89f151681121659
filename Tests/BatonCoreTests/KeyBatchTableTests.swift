@testable import BatonEngine
import Testing

/// The engine's one step for triggers a store decides together (`KeyDecision.batch`, the fleet's
/// trigger batch) and its one hold-then-count (`RateBook.admit`, which a host's table, a fleet's
/// start and a batch's new run all ask), stated as tables without PostgreSQL: what a batch of
/// several triggers answers (outcomes, stops, slots, starts), on rows as a store read them.
@Suite("KeyDecision.batch: one engine step per transaction of triggers")
struct KeyBatchTableTests {
    static let now = Timestamp(rawValue: 100_000_000)
    static let me = "web-1/1/aa"

    static func action(_ configure: (inout Action) -> Void = { _ in }) -> Action {
        var action = Action(name: "deploy", exec: ["true"])
        configure(&action)
        return action
    }

    static func entry(_ key: String, _ policy: Policy = .reject, _ action: Action = action(), slot: Timestamp? = nil) -> KeyDecision.Batch.Entry {
        KeyDecision.Batch.Entry(trigger: Trigger(action: action, key: key, policy: policy, params: [:], peer: nil, slot: slot))
    }

    /// The batch as a store runs it: decided once, then numbered with the ids its draft asks for (from 100).
    static func batch(_ entries: [KeyDecision.Batch.Entry], _ rows: KeyDecision.Batch.Rows) -> KeyDecision.Batch.Decided {
        let draft = KeyDecision.batch(entries, rows, me: me, fingerprint: \.fingerprint)
        return draft.taking((0..<Int64(draft.ids)).map { 100 + $0 })
    }

    static func made(_ run: Int64) -> KeyDecision.Batch.Outcome { .created(.created(run), window: nil) }

    static func limited(_ over: RateLimit.Over, runs: Int = 1, scope: RateLimit.Scope = .action) -> Action {
        action { $0.rateLimit = RateLimit(runs: runs, per: .seconds(60), scope: scope, over: over) }
    }

    struct BucketCase: Sendable, CustomTestStringConvertible {
        var name: String
        var action: Action
        /// The bucket's starts inside its window, as read.
        var starts: [Timestamp] = []
        var keys: [String]
        var outcomes: [KeyDecision.Batch.Outcome]
        var started: [Int64]
        var testDescription: String { name }
    }

    static let bucketCases: [BucketCase] = [
        BucketCase(name: "two keys, one action-wide bucket of one a minute (delay): both made, the first started, the second waits",
                   action: limited(.delay), keys: ["a", "b"], outcomes: [made(100), made(101)], started: [100]),
        BucketCase(name: "three keys, one bucket of two a minute: the first two start, each counted for the next; the third waits",
                   action: limited(.delay, runs: 2), keys: ["a", "b", "c"], outcomes: [made(100), made(101), made(102)], started: [100, 101]),
        BucketCase(name: "two keys, one bucket of one a minute (reject): the second is refused behind the first's waiting run",
                   action: limited(.reject), keys: ["a", "b"],
                   outcomes: [made(100), .denied(.rateLimited(action: "deploy", limit: limited(.reject).rateLimit!, next: now + .seconds(60)), .rateLimited)],
                   started: [100]),
        BucketCase(name: "a rate hold: the bucket's minute already has its start (delay): made, not started",
                   action: limited(.delay), starts: [now + .seconds(-10)], keys: ["a"], outcomes: [made(100)], started: []),
        BucketCase(name: "a rate hold (reject): refused until the start leaves its window",
                   action: limited(.reject), starts: [now + .seconds(-10)], keys: ["a"],
                   outcomes: [.denied(.rateLimited(action: "deploy", limit: limited(.reject).rateLimit!, next: now + .seconds(50)), .rateLimited)],
                   started: []),
        BucketCase(name: "per-key buckets of one a minute: two keys both start",
                   action: limited(.delay, scope: .key), keys: ["a", "b"], outcomes: [made(100), made(101)], started: [100, 101]),
    ]

    @Test("rate buckets in a batch: each new run is held or counted as it starts, for the triggers and starts after it", arguments: bucketCases)
    func buckets(_ row: BucketCase) {
        var rows = KeyDecision.Batch.Rows(now: Self.now)
        for key in row.keys {
            if let claim = row.action.rateClaim(key: key) { rows.rates[claim.bucket] = RateBucket(starts: row.starts) }
        }
        let decided = Self.batch(row.keys.map { Self.entry($0, .reject, row.action) }, rows)
        #expect(decided.outcomes == row.outcomes)
        #expect(decided.starts == row.started)
    }

    @Test("a replace of a queued run in a batch: the run ends (one seq after its last), leaves the slot and its bucket; the next trigger of the key joins the new run, which starts")
    func replaceQueued() {
        // Two a minute, action-wide: the ended run no longer waits in the bucket, so "j"'s new run fits beside the replacing one.
        let action = Self.limited(.reject, runs: 2)
        var rows = KeyDecision.Batch.Rows(now: Self.now, slots: ["k": KeySlot(holder: 7)])
        rows.runs[7] = KeyFacts.Run(phase: .queued, lastSeq: 1, owner: "other", definition: action.fingerprint)
        rows.rates["action deploy"] = RateBucket(waiting: [7: .init(key: "k")])
        let decided = Self.batch([Self.entry("k", .replace, action), Self.entry("k", .join, action), Self.entry("j", .reject, action)], rows)
        let stop = RunMachine.Stop.replaced(by: 100)
        let end = Transition(runID: 7, seq: 2, from: .queued, to: .cancelled, at: Self.now, detail: stop.detail)
        #expect(decided.outcomes == [.created(.replaced(100, stopping: [7]), window: nil), .shared(.joined(100)), Self.made(101)])
        #expect(decided.stops == [0: [RunStop(run: 7, stop: stop, decision: .ends(end))]])
        #expect(decided.slots == ["k": KeySlot(holder: 100), "j": KeySlot(holder: 101)])
        #expect(decided.starts == [100, 101])
    }

    @Test("a replace of a running run: its owner stops it, the new run waits for it to drain, and a replace of this host's own run says so")
    func replaceRunning() {
        for (owner, here) in [("other", false), (Self.me, true)] {
            var rows = KeyDecision.Batch.Rows(now: Self.now, slots: ["k": KeySlot(holder: 7)])
            rows.runs[7] = KeyFacts.Run(phase: .loading, lastSeq: 2, owner: owner)
            let decided = Self.batch([Self.entry("k", .replace)], rows)
            #expect(decided.stops == [0: [RunStop(run: 7, stop: .replaced(by: 100), decision: .owner(here: here))]])
            #expect(decided.stops[0]?.first?.here == here)
            #expect(decided.starts == [], "the replaced run still drains")
        }
    }

    @Test("a pause in a batch: refused and recorded (a schedule slot skipped); a held pause makes the run, which waits; another action runs")
    func pause() {
        var rows = KeyDecision.Batch.Rows(now: Self.now)
        rows.pauses["deploy"] = ActionPause(action: "deploy", by: "ops", reason: "freeze", at: Self.now + .seconds(-1))
        let other = Self.action { $0.name = "build" }
        let refused = Self.batch([Self.entry("a"), Self.entry("b", .reject, Self.action(), slot: Self.now), Self.entry("c", .reject, other)], rows)
        let pause = rows.pauses["deploy"]!
        #expect(refused.outcomes == [.denied(.paused(pause), .paused), .denied(.paused(pause), .skipped), Self.made(100)])
        #expect(refused.starts == [100])
        rows.pauses["deploy"]!.hold = true
        let held = Self.batch([Self.entry("a"), Self.entry("c", .reject, other)], rows)
        #expect(held.outcomes == [Self.made(100), Self.made(101)])
        #expect(held.starts == [101], "the held pause's run waits queued")
    }

    @Test("the one hold-then-count: no claim, the rest decides; held, the rest is not asked and nothing counts; let, a start counts only if the rest holds")
    func holdThenCount() {
        let claim = RateClaim(bucket: "b", limit: RateLimit(runs: 1, per: .seconds(60)))
        var book = RateBook()
        var asked = 0
        #expect(book.admit(1, nil, at: Self.now, held: { [Int64]() }, starts: { asked += 1; return true }) == .started)
        #expect(book.admit(2, claim, at: nil, held: { [Int64]() }, starts: { asked += 1; return false }) == .waits)
        #expect(book.starts.isEmpty && asked == 2)
        #expect(book.admit(3, claim, at: Self.now, held: { [Int64]() }, starts: { false }) == .waits)
        #expect(book.starts.isEmpty, "not started: not counted")
        #expect(book.admit(3, claim, at: Self.now, held: { [Int64]() }, starts: { true }) == .started)
        #expect(book.starts["b"] == [Self.now])
        #expect(book.admit(4, claim, at: Self.now, held: { [Int64]() }, starts: { asked += 1; return true }) == .held(until: Self.now + .seconds(60)))
        #expect(asked == 2 && book.starts["b"] == [Self.now], "held: the rest not asked, nothing counted")
        var behind = RateBook()
        #expect(behind.admit(5, claim, at: Self.now, held: { [Int64(4)] }, starts: { true }) == .held(until: Self.now + .seconds(60)),
                "behind an older run held already")
        #expect(behind.admit(3, claim, at: Self.now, held: { [Int64(4)] }, starts: { true }) == .started, "a younger held run does not count ahead")
    }

    @Test("a host's table and a fleet's bucket admit alike through the one hold-then-count: the first start counts, the next is held until the window frees")
    func hostAndFleetAdmitAlike() {
        let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 1, per: .seconds(60), scope: .action, over: .delay))
        var table = FlightTable(limit: 4)
        var bucket = RateBucket(waiting: [1: .init(key: "a"), 2: .init(key: "b")])
        for (run, key) in [(Int64(1), "a"), (2, "b")] {
            table.apply(.created(run), key: key, slot: KeySlot(holder: run), action: "deploy", rate: claim)
            table.markDurable(run)
        }
        #expect(table.admit(at: Self.now) == [1])
        #expect(table.takeRateHolds().map(\.until) == [Self.now + .seconds(60)])
        #expect(bucket.admit(1, claim, at: Self.now) == .started)
        #expect(bucket.admit(2, claim, at: Self.now) == .held(until: Self.now + .seconds(60)))
        #expect(table.rates.starts[claim.bucket] == bucket.starts && bucket.waiting[2]?.until == table.rateUntil(of: 2))
    }
}
