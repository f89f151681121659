import BatonCore
@testable import BatonFleet
import Testing

/// A batch of triggers decided from the rows its transaction read (`TriggerBatch.decide`): each
/// trigger by the engine's rules, against its key as the triggers before it in the batch left it.
@Suite("TriggerBatch: triggers that arrive together, decided from rows")
struct TriggerBatchTests {
    static let me = "web-1/1/aa"
    static let now = Timestamp(rawValue: 100_000_000)

    static func action(_ name: String = "deploy", cooldown: Duration? = nil, debounce: Duration? = nil, locks: [String] = []) -> Action {
        var action = Action(name: name, exec: ["true"])
        action.cooldown = cooldown
        action.debounce = debounce
        action.locks = locks.map { LockClaim($0, limit: 1) }
        return action
    }

    static func entry(_ key: String, _ policy: Policy = .reject, action: Action = action(), delivery: String? = nil,
                      slot: Int64? = nil, startIfFree: Bool = true) -> TriggerBatch.Entry {
        TriggerBatch.Entry(trigger: Trigger(action: action, key: key, policy: policy, params: [:], peer: nil,
                                            delivery: delivery.map { Delivery(hook: "gh", id: $0) }, slot: slot.map(Timestamp.init(rawValue:))),
                           startIfFree: startIfFree)
    }

    static func decide(_ entries: [TriggerBatch.Entry], _ rows: TriggerBatch.Rows = TriggerBatch.Rows(now: now)) -> TriggerBatch.Decided {
        let draft = TriggerBatch.decide(entries, rows, me: me)
        return draft.taking((0..<Int64(draft.ids)).map { 100 + $0 })
    }

    static func facts(_ phase: Phase, incarnation: String = me, definition: String? = nil, host: String = "web-1") -> TriggerBatch.RunFacts {
        TriggerBatch.RunFacts(phase: phase, lastSeq: phase == .queued ? 1 : 2, owner: incarnation, definition: definition, host: host)
    }

    /// A queued run's end for a replace, as the engine's machine records it, at the rows' clock.
    static func ends(_ run: Int64, by: Int64, seq: Int) -> FleetStop {
        let stop = RunMachine.Stop.replaced(by: by)
        return FleetStop(run: run, stop: stop, decision: .ends(Transition(runID: run, seq: seq, from: .queued, to: .cancelled, at: now, detail: stop.detail)))
    }

    @Test("free keys: each trigger makes a run, ids taken in arrival order, every one starts")
    func distinctKeys() {
        let decided = Self.decide([Self.entry("b"), Self.entry("a"), Self.entry("c")])
        #expect(decided.outcomes == [.created(.created(100), window: nil), .created(.created(101), window: nil), .created(.created(102), window: nil)])
        #expect(decided.starts == [100, 101, 102])
        #expect(decided.slots == ["b": KeySlot(holder: 100), "a": KeySlot(holder: 101), "c": KeySlot(holder: 102)])
    }

    @Test("an action with approve: its new run holds its free key but does not start in the batch; the next trigger of the key meets it")
    func awaitingApproval() {
        var gated = Self.action("deploy")
        gated.approve = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]))
        let decided = Self.decide([Self.entry("deploy", action: gated), Self.entry("other"), Self.entry("deploy", action: gated)])
        #expect(decided.outcomes.first == .created(.created(100), window: nil))
        #expect(decided.starts == [101], "the waiting run does not start; the other key's does")
        #expect(decided.slots["deploy"] == KeySlot(holder: 100), "it holds its key as any run in flight")
        #expect(decided.outcomes.last == .shared(.rejected(100, line: nil)) || decided.outcomes.last?.sharedRun == 100, "\(decided.outcomes)")
    }

    @Test("one key, in arrival order: each trigger meets the slot the ones before it left",
          arguments: [
              ([Policy.queue, .queue, .queue], [FlightTable.Decision.created(100), .followUp(101, after: 100), .coalesced(101)], [Int64(100)]),
              ([.reject, .reject], [.created(100), .rejected(100)], [100]),
              ([.join, .join, .reject], [.created(100), .joined(100), .rejected(100)], [100]),
              // The first run is replaced before it could start: it ends queued, only the second starts.
              ([.reject, .replace], [.created(100), .replaced(101, stopping: [100])], [101]),
              ([.queue, .queue, .replace], [.created(100), .followUp(101, after: 100), .replaced(102, stopping: [100, 101])], [102]),
          ] as [([Policy], [FlightTable.Decision], [Int64])])
    func oneKey(policies: [Policy], decisions: [FlightTable.Decision], starts: [Int64]) {
        let decided = Self.decide(policies.map { Self.entry("k", $0) })
        #expect(decided.outcomes.map(\.decision) == decisions)
        #expect(decided.starts == starts)
    }

    @Test("a replace ends the queued runs before it in the batch at once, their seq after their queued")
    func replaceInBatch() {
        let decided = Self.decide([Self.entry("k", .queue), Self.entry("k", .queue), Self.entry("k", .replace)])
        #expect(decided.stops[2] == [Self.ends(100, by: 102, seq: 2), Self.ends(101, by: 102, seq: 2)])
        #expect(decided.slots["k"] == KeySlot(holder: 102))
    }

    @Test("a replace of loading runs marks them (this host's are stopped here) and the new run waits for them to drain")
    func replaceLoading() {
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slots["k"] = KeySlot(holder: 7, followUp: 8)
        rows.slots["j"] = KeySlot(holder: 9)
        rows.runs = [7: Self.facts(.loading), 8: Self.facts(.queued, incarnation: "web-2/2/bb"), 9: Self.facts(.retrying, incarnation: "web-2/2/bb")]
        let decided = Self.decide([Self.entry("k", .replace), Self.entry("j", .replace)], rows)
        #expect(decided.stops[0] == [FleetStop(run: 7, stop: .replaced(by: 100), decision: .owner(here: true)), Self.ends(8, by: 100, seq: 2)])
        #expect(decided.stops[1] == [FleetStop(run: 9, stop: .replaced(by: 101), decision: .owner(here: false))])
        #expect(decided.slots == ["k": KeySlot(holder: 100, draining: [7]), "j": KeySlot(holder: 101, draining: [9])])
        #expect(decided.starts.isEmpty)
    }

    @Test("a delivery seen before, in the rows or earlier in the batch, is refused with its run; a rejected one records none")
    func deliveries() {
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.deliveries[TriggerBatch.DeliveryID(hook: "gh", id: "old")] = 5
        let decided = Self.decide([Self.entry("a", delivery: "old"), Self.entry("b", delivery: "new"), Self.entry("c", delivery: "new"),
                                   Self.entry("b", delivery: "x"), Self.entry("d", delivery: "x")], rows)
        #expect(decided.outcomes == [.refused(.delivered(run: 5, hook: "gh", delivery: "old")), .created(.created(100), window: nil),
                                     .refused(.delivered(run: 100, hook: "gh", delivery: "new")), .shared(.rejected(100)),
                                     .created(.created(101), window: nil)])
    }

    @Test("a schedule slot's run: joined while in flight (made in the batch or before), nothing once it ended")
    func scheduleSlots() {
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slotRuns[SlotBook.Slot(action: "deploy", at: Timestamp(rawValue: 60))] = 5
        rows.runs[5] = Self.facts(.success)
        let decided = Self.decide([Self.entry("a", slot: 60), Self.entry("a", slot: 120), Self.entry("b", slot: 120)], rows)
        #expect(decided.outcomes == [.shared(.slotRan(5)), .created(.created(100), window: nil), .shared(.joined(100))])
    }

    @Test("a join or coalesce of a run made from another definition is refused, naming its host; a reject is not")
    func definitions() {
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slots["k"] = KeySlot(holder: 7)
        rows.runs[7] = Self.facts(.loading, incarnation: "web-2/2/bb", definition: "other", host: "web-2")
        let decided = Self.decide([Self.entry("k", .join), Self.entry("k", .reject)], rows)
        #expect(decided.outcomes == [.refused(.definitionMismatch(run: 7, action: "deploy", host: "web-2")), .shared(.rejected(7))])
    }

    @Test("a burst of a debounced key makes one run with a window, the rest join it and push it; it never starts in the batch")
    func debounce() {
        let action = Self.action(debounce: .seconds(5))
        let decided = Self.decide([Self.entry("k", .queue, action: action), Self.entry("k", .queue, action: action),
                                   Self.entry("k", .queue, action: action)])
        let window = DebounceWindow(action, first: Self.now)
        #expect(decided.outcomes == [.created(.created(100), window: window), .debounced(run: 100), .debounced(run: 100)])
        #expect(decided.windows[100]?.deadline == Self.now + .seconds(5))
        #expect(decided.starts.isEmpty)
    }

    @Test("a debounced trigger joins the key's pending run from the rows and pushes its window on the database's clock")
    func debouncePending() {
        let action = Self.action(debounce: .seconds(5))
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slots["k"] = KeySlot(holder: 7)
        rows.runs[7] = Self.facts(.queued, incarnation: "web-2/2/bb")
        rows.windows[7] = DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: Self.now.rawValue - 2_000_000))
        let decided = Self.decide([Self.entry("k", .queue, action: action)], rows)
        #expect(decided.outcomes == [.debounced(run: 7)])
        #expect(decided.windows[7]?.deadline == Self.now + .seconds(5))
    }

    @Test("inside the cooldown after the key's last success a trigger is cooled with it; after it, it runs")
    func cooldown() {
        let action = Self.action(cooldown: .seconds(10))
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.lastSuccess["hot"] = TriggerBatch.LastSuccess(run: 5, at: Timestamp(rawValue: Self.now.rawValue - 3_000_000))
        rows.lastSuccess["cold"] = TriggerBatch.LastSuccess(run: 6, at: Timestamp(rawValue: Self.now.rawValue - 10_000_000))
        let decided = Self.decide([Self.entry("hot", action: action), Self.entry("cold", action: action)], rows)
        #expect(decided.outcomes == [.shared(.cooled(5)), .created(.created(100), window: nil)])
    }

    @Test("a new run starts in the batch as KeyDecision.admitStart decides on what the batch left: its key, approval, needs, held pause and window")
    func startRule() {
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slots["k"] = KeySlot(holder: 7)
        rows.slots["held"] = KeySlot(holder: 8)
        func starts(_ action: Action, run: Int64 = 7, window: DebounceWindow? = nil) -> Bool {
            var buckets = rows.rates
            return KeyDecision.admitStart(run, of: action, key: "k", slot: rows.slots["k"]!, window: window, pause: rows.pauses[action.name],
                                          buckets: &buckets, at: rows.now)
        }
        #expect(starts(Self.action()))
        #expect(!starts(Self.action(), run: 9), "another run holds the key")
        var gated = Self.action()
        gated.approve = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]))
        #expect(!starts(gated), "it waits for its approval")
        var needing = Self.action()
        needing.needs = [NeedTarget(action: Self.action("build"), params: [:])]
        #expect(!starts(needing), "its needs are asked after it is made")
        #expect(!starts(Self.action(), window: DebounceWindow(window: .seconds(5), maxWait: .seconds(60), first: Self.now)), "its window is open")
        rows.pauses["deploy"] = ActionPause(action: "deploy", by: "ops", reason: "migrating", at: Self.now, hold: true)
        #expect(!starts(Self.action()), "a held pause")
        rows.pauses["deploy"] = ActionPause(action: "deploy", by: "ops", reason: "migrating", at: Self.now, until: Self.now, hold: true)
        #expect(starts(Self.action()), "a pause whose time ran out holds nothing")
    }

    @Test("two keys sharing one action-wide rate bucket (one run a minute, over: delay) in one batch: both made, the first started, the second held and left waiting in the bucket")
    func sharedBucketInABatch() {
        var action = Self.action()
        action.rateLimit = RateLimit(runs: 1, per: .seconds(60), scope: .action, over: .delay)
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.rates["action deploy"] = RateBucket()
        let decided = Self.decide([Self.entry("a", action: action), Self.entry("b", action: action)], rows)
        #expect(decided.outcomes.count { if case .created = $0 { true } else { false } } == 2)
        #expect(decided.starts == [100], "the bucket lets one start in its minute")
    }

    @Test("a trigger decided again after its start was refused makes its run but does not start it")
    func notStarting() {
        let decided = Self.decide([Self.entry("a", startIfFree: false), Self.entry("b")])
        #expect(decided.starts == [101])
    }

    @Test("the opening locks the key rows once each in key order, then the lock rows in name order, before any read")
    func opening() {
        let opening = TriggerBatch.opening([Self.entry("b"), Self.entry("a", action: Self.action(locks: ["db", "cache"])), Self.entry("b")])
        let sql = opening.statements.map(\.sql)
        #expect(sql[0] == "BEGIN" && sql[1].contains("force_generic_plan"))
        #expect(opening.statements[2].parameters == [#"{"a","b"}"#])
        #expect(sql[3].contains("ORDER BY key FOR UPDATE") && opening.slots == 3)
        #expect(sql[5].contains("FROM locks") && sql[5].contains("ORDER BY name FOR UPDATE"))
        #expect(opening.statements[5].parameters == [#"{"cache","db"}"#])
        #expect(opening.runs > 5 && opening.clock > 5)
        #expect(opening.lastSuccess == nil && opening.deliveries == nil && opening.slotRuns == nil)
    }

    @Test("seeded random batches decide exactly as the same triggers one transaction each, each reading what the last committed",
          arguments: 0..<200)
    func sameAsOneByOne(seed: Int) {
        // The engine's SplitMix, from the state this test's own copy of it began at: the same cases.
        var random = SplitMix(seed: UInt64(seed) &+ 0x9E37_79B9_7F4A_7C15)
        let actions = [Self.action("a"), Self.action("d", debounce: .seconds(5)), Self.action("c", cooldown: .seconds(10))]
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.lastSuccess["c-0"] = TriggerBatch.LastSuccess(run: 1, at: Timestamp(rawValue: Self.now.rawValue - 1_000_000))
        let entries = (0..<Int.random(in: 1...24, using: &random)).map { _ in
            let action = actions.randomElement(using: &random)!
            return Self.entry("\(action.name)-\(Int.random(in: 0...2, using: &random))", Policy.allCases.randomElement(using: &random)!,
                              action: action, delivery: Bool.random(using: &random) ? "d\(Int.random(in: 0...5, using: &random))" : nil,
                              slot: Int.random(in: 0...3, using: &random) == 0 ? 60 : nil)
        }
        let batch = Self.decide(entries, rows)
        var one = rows
        var outcomes: [TriggerBatch.Outcome] = []
        var next: Int64 = 100
        for entry in entries {
            let draft = TriggerBatch.decide([entry], one, me: Self.me)
            let decided = draft.taking((0..<Int64(draft.ids)).map { next + $0 })
            next += Int64(draft.ids)
            outcomes += decided.outcomes
            Self.commit(entry, decided, started: batch.starts, into: &one)
        }
        #expect(batch.outcomes.map(\.decision) == outcomes.map(\.decision), "seed \(seed)")
        for (key, slot) in batch.slots {
            #expect(slot.holder == one.slots[key]?.holder && slot.followUp == one.slots[key]?.followUp, "seed \(seed), key \(key)")
        }
    }

    /// What the next transaction reads after one trigger's commit: the rows as the database would
    /// have them. A run started only if the batch started it: one the batch replaced before its
    /// end never starts there (as a run whose host had no start slot free when it was made).
    static func commit(_ entry: TriggerBatch.Entry, _ decided: TriggerBatch.Decided, started: [Int64], into rows: inout TriggerBatch.Rows) {
        let trigger = entry.trigger
        let delivery = trigger.delivery.map { TriggerBatch.DeliveryID(hook: $0.hook, id: $0.id) }
        for (key, slot) in decided.slots { rows.slots[key] = slot }
        for (run, window) in decided.windows { rows.windows[run] = window }
        for stop in decided.stops.values.flatMap({ $0 }) where stop.end != nil { rows.runs[stop.run]?.phase = .cancelled }
        switch decided.outcomes[0] {
        case .refused, .denied, .needRefused: break
        case let .shared(decision):
            if case .rejected = decision {} else if let delivery { rows.deliveries[delivery] = decision.run }
        case let .debounced(run):
            if let delivery { rows.deliveries[delivery] = run }
        case let .created(decision, _):
            rows.runs[decision.run] = facts(started.contains(decision.run) ? .loading : .queued)
            if let delivery { rows.deliveries[delivery] = decision.run }
            if let slot = trigger.slot { rows.slotRuns[SlotBook.Slot(action: trigger.action.name, at: slot)] = decision.run }
        }
    }
}

extension TriggerBatch.Outcome {
    /// The decision, or the refusal's error, to compare batches by.
    var decision: FlightTable.Decision? {
        switch self {
        case .refused, .denied, .needRefused: nil
        case let .shared(decision), let .created(decision, _): decision
        case let .debounced(run): .joined(run)
        }
    }
}

extension TriggerBatchTests {
    @Test("an action's fingerprint is computed only where a decision needs it, once per action for the batch's two decisions")
    func fingerprintsWhenNeeded() {
        let action = Self.action()
        var rows = TriggerBatch.Rows(now: Self.now)
        rows.slots["k"] = KeySlot(holder: 5)
        rows.runs[5] = Self.facts(.loading, incarnation: "other", definition: action.fingerprint, host: "web-2")
        func decide(_ entries: [TriggerBatch.Entry]) -> (TriggerBatch.Decided, computed: Int) {
            var fingerprints = ActionFingerprints()
            let draft = TriggerBatch.decide(entries, rows, me: Self.me, fingerprints: &fingerprints)
            let decided = draft.taking((0..<Int64(draft.ids)).map { 100 + $0 })
            return (decided, fingerprints.computed)
        }
        // Rejected: nothing to compare, nothing to write.
        let rejected = decide((0..<4).map { _ in Self.entry("k", .reject) })
        #expect(rejected.0.outcomes == Array(repeating: .shared(.rejected(5, line: nil)), count: 4))
        #expect(rejected.computed == 0)
        // Joined: each compares with the run's known definition, from one fingerprint.
        let joined = decide((0..<4).map { _ in Self.entry("k", .join) })
        #expect(joined.0.outcomes == Array(repeating: .shared(.joined(5)), count: 4))
        #expect(joined.computed == 1)
        // New runs: one fingerprint per action for their rows, and for the triggers after them.
        var other = Self.action("build")
        other.exec = ["make"]
        let made = decide([Self.entry("a", .join), Self.entry("b"), Self.entry("a", .join), Self.entry("c", action: other)])
        #expect(made.0.outcomes.map(\.decision) == [.created(100), .created(101), .joined(100), .created(102)])
        #expect(made.0.definitions == [100: action.fingerprint, 101: action.fingerprint, 102: other.fingerprint])
        #expect(made.computed == 2)
    }

    @Test("two definitions of one action in a batch (a reload between its triggers): each run records its own, a join of the other is refused")
    func fingerprintsPerDefinition() {
        let before = Self.action()
        var after = before
        after.exec = ["false"]
        var fingerprints = ActionFingerprints()
        let entries = [Self.entry("k", .join, action: before), Self.entry("k", .join, action: after), Self.entry("j", .join, action: after)]
        let draft = TriggerBatch.decide(entries, TriggerBatch.Rows(now: Self.now), me: Self.me, fingerprints: &fingerprints)
        let decided = draft.taking((0..<Int64(draft.ids)).map { 100 + $0 })
        #expect(decided.outcomes.first?.decision == .created(100))
        guard case .refused(.definitionMismatch(run: 100, _, _)) = decided.outcomes[1] else {
            Issue.record("the other definition joined: \(decided.outcomes)"); return
        }
        #expect(decided.definitions == [100: before.fingerprint, 101: after.fingerprint])
        #expect(fingerprints.computed == 2)
    }

    @Test("a run's row whose last seq does not read fails the read (a stop writes the seq after it: never guessed)")
    func unreadableLastSeq() throws {
        var rows = TriggerBatch.Rows(now: Self.now)
        let row: [String?] = ["7", "queued", "3", Self.me, nil, nil, nil, nil, nil, nil, "{}"]
        try TriggerBatch.fact(row, into: &rows)
        #expect(rows.runs[7]?.lastSeq == 3)
        for bad: String? in [nil, "x"] {
            var broken = row
            broken[0] = "8"
            broken[2] = bad
            #expect(throws: PGError.self) { try TriggerBatch.fact(broken, into: &rows) }
        }
        #expect(rows.runs[8] == nil)
    }
}
