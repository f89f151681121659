import BatonCore
@testable import BatonFleet
import Testing

/// The trigger pipeline stated once, as a table (`KeyDecision`), and run twice: against the
/// engine's decision as one machine takes it, and through the fleet's trigger batch on the rows
/// a transaction reads (`TriggerBatch.Rows`). Each row is one rule; both must answer the same.
@Suite("KeyDecision: one table for a host and the fleet")
struct KeyDecisionTableTests {
    /// One case: what the key holds (runs by phase), what the trigger is, and what must happen.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var policy: Policy = .reject
        var cooldown: Duration?
        var allowsForce = false
        var force = false
        var debounce: Duration?
        var slot = KeySlot()
        var phases: [Int64: Phase] = [:]
        var windows: [Int64: DebounceWindow] = [:]
        var lastSuccess: KeyDecision.LastSuccess?
        var delivered: Int64?
        var scheduledRun: Int64?
        var definitions: [Int64: String] = [:]
        /// `queue: { depth: N }`, the trigger's params, and the params of the runs it finds.
        var depth = 1
        var params: [String: String] = [:]
        var runParams: [Int64: [String: String]] = [:]
        /// The action's pause (a host's table, or the fleet's `pauses` row).
        var paused: ActionPause?
        /// The action's rate limit and when a new run would fit under it (one machine's only: a fleet config refuses it).
        var rate: KeyDecision.Rate?
        var expected: KeyDecision
        var testDescription: String { name }

        static let now = Timestamp(rawValue: 100_000_000)
        static let candidate: Int64 = 50
        static let slotAt = Timestamp(rawValue: 60_000_000)

        var action: Action {
            var action = Action(name: "deploy", exec: ["true"])
            action.cooldown = cooldown
            action.allowsForce = allowsForce
            action.debounce = debounce
            action.queueDepth = depth
            action.rateLimit = rate?.limit
            return action
        }

        var trigger: Trigger {
            Trigger(action: action, key: "deploy", policy: policy, params: params, peer: nil, force: force,
                    delivery: delivered.map { _ in Delivery(hook: "gh", id: "d1", address: nil) }, slot: scheduledRun.map { _ in Self.slotAt })
        }

        /// The engine's view, made by the engine from the key's facts (`KeyDecision.view`), as a
        /// host's `keyFacts` gives them: the runs in flight by phase, with their params.
        var view: KeyDecision.View {
            var facts = KeyFacts(slot: slot, now: Self.now, windows: windows, delivered: delivered, slotRun: scheduledRun,
                                 lastSuccess: lastSuccess, pause: paused, rate: rate)
            for (run, phase) in phases {
                facts.runs[run] = KeyFacts.Run(phase: phase, lastSeq: 2, definition: definitions[run], host: definitions[run] == nil ? nil : "web-2",
                                               params: runParams[run] ?? [:])
            }
            return KeyDecision.view(facts)
        }

        /// The same facts as the fleet's transaction reads them.
        var rows: TriggerBatch.Rows {
            var rows = TriggerBatch.Rows(now: Self.now)
            rows.slots["deploy"] = slot
            for (run, phase) in phases {
                rows.runs[run] = TriggerBatch.RunFacts(phase: phase, lastSeq: 2, owner: "other", definition: definitions[run] ?? action.fingerprint,
                                                       host: definitions[run] == nil ? nil : "web-2", params: runParams[run] ?? [:])
            }
            rows.windows = windows
            rows.lastSuccess["deploy"] = lastSuccess.map { TriggerBatch.LastSuccess(run: $0.run, at: $0.at) }
            if let delivered { rows.deliveries[TriggerBatch.DeliveryID(hook: "gh", id: "d1")] = delivered }
            if let scheduledRun { rows.slotRuns[SlotBook.Slot(action: "deploy", at: Self.slotAt)] = scheduledRun }
            if let paused { rows.pauses["deploy"] = paused }
            return rows
        }
    }

    static let held = KeySlot(holder: 1)
    static let heldWithFollowUp = KeySlot(holder: 1, followUp: 2)
    static let heldPause = ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Timestamp(rawValue: 90_000_000), hold: true)
    static let pause = ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Timestamp(rawValue: 90_000_000),
                                   until: Timestamp(rawValue: 200_000_000))
    static let lineOfTwo = KeySlot(holder: 1, line: [2, 3])
    static let lineParams: [Int64: [String: String]] = [2: ["ref": "a"], 3: ["ref": "b"]]
    static let window = DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: 98_000_000))
    static var pushed: DebounceWindow {
        var pushed = window
        pushed.restart(at: Case.now)
        return pushed
    }

    static let cases: [Case] = [
        Case(name: "free key, reject: a new run", expected: .created(.created(50), window: nil)),
        Case(name: "free key, replace: a new run", policy: .replace, expected: .created(.created(50), window: nil)),
        Case(name: "held, reject: rejected by the holder", slot: held, phases: [1: .loading], expected: .shared(.rejected(1))),
        Case(name: "held, join: joins the holder", policy: .join, slot: held, phases: [1: .loading], expected: .shared(.joined(1))),
        Case(name: "held, queue: the follow-up", policy: .queue, slot: held, phases: [1: .loading],
             expected: .created(.followUp(50, after: 1), window: nil)),
        Case(name: "held with a follow-up, queue: coalesces into it", policy: .queue, slot: heldWithFollowUp,
             phases: [1: .loading, 2: .queued], expected: .shared(.coalesced(2))),
        Case(name: "held with a follow-up, replace: stops both", policy: .replace, slot: heldWithFollowUp,
             phases: [1: .loading, 2: .queued], expected: .created(.replaced(50, stopping: [1, 2]), window: nil)),
        Case(name: "a line of one, other params: still coalesces into its follow-up", policy: .queue, slot: heldWithFollowUp,
             phases: [1: .loading, 2: .queued], params: ["ref": "z"], runParams: [2: ["ref": "a"]], expected: .shared(.coalesced(2))),
        Case(name: "a line with room, new params: a new entry at its end, after the last", policy: .queue, slot: lineOfTwo,
             phases: [1: .loading, 2: .queued, 3: .queued], depth: 3, params: ["ref": "c"], runParams: lineParams,
             expected: .created(.followUp(50, after: 3), window: nil)),
        Case(name: "a line, a waiting entry's params: joins that entry", policy: .queue, slot: lineOfTwo,
             phases: [1: .loading, 2: .queued, 3: .queued], depth: 3, params: ["ref": "b"], runParams: lineParams,
             expected: .shared(.coalesced(3))),
        Case(name: "a full line, a waiting entry's params: still joins it", policy: .queue, slot: lineOfTwo,
             phases: [1: .loading, 2: .queued, 3: .queued], depth: 2, params: ["ref": "a"], runParams: lineParams,
             expected: .shared(.coalesced(2))),
        Case(name: "a full line, new params: refused busy with the line's length", policy: .queue, slot: lineOfTwo,
             phases: [1: .loading, 2: .queued, 3: .queued], depth: 2, params: ["ref": "c"], runParams: lineParams,
             expected: .shared(.rejected(1, line: 2))),
        Case(name: "a line, replace: stops the holder and every entry, in order", policy: .replace, slot: lineOfTwo,
             phases: [1: .loading, 2: .queued, 3: .queued], depth: 3, runParams: lineParams,
             expected: .created(.replaced(50, stopping: [1, 2, 3]), window: nil)),
        Case(name: "paused: nothing runs, whatever the policy; refused with the pause", policy: .replace, slot: held, phases: [1: .loading],
             paused: pause, expected: .paused(pause, skipped: false)),
        Case(name: "paused, a schedule slot (even one that ran): skipped", phases: [3: .success], scheduledRun: 3, paused: pause,
             expected: .paused(pause, skipped: true)),
        Case(name: "held (pause --hold): a trigger makes its run, which waits queued", paused: heldPause,
             expected: .created(.created(50), window: nil)),
        Case(name: "held: single flight still applies, a queued run holds the key (reject: busy)", slot: KeySlot(holder: 1),
             phases: [1: .queued], paused: heldPause, expected: .shared(.rejected(1))),
        Case(name: "held, a schedule slot: queued as any trigger, not skipped", phases: [3: .success], scheduledRun: 3, paused: heldPause,
             expected: .shared(.slotRan(3))),
        Case(name: "a pause whose end has passed: runs", paused: ActionPause(action: "deploy", by: "alice", reason: "r", at: Timestamp(rawValue: 1),
                                                                            until: Case.now), expected: .created(.created(50), window: nil)),
        Case(name: "inside the cooldown: the success answers", cooldown: .seconds(10),
             lastSuccess: .init(run: 9, at: Timestamp(rawValue: 95_000_000)), expected: .shared(.cooled(9))),
        Case(name: "exactly the cooldown after: runs", cooldown: .seconds(5),
             lastSuccess: .init(run: 9, at: Timestamp(rawValue: 95_000_000)), expected: .created(.created(50), window: nil)),
        Case(name: "forced where allowed: runs inside the cooldown", cooldown: .seconds(10), allowsForce: true, force: true,
             lastSuccess: .init(run: 9, at: Timestamp(rawValue: 95_000_000)), expected: .created(.created(50), window: nil)),
        Case(name: "forced where not allowed: cooled", cooldown: .seconds(10), force: true,
             lastSuccess: .init(run: 9, at: Timestamp(rawValue: 95_000_000)), expected: .shared(.cooled(9))),
        Case(name: "a delivery seen before: refused with its run", delivered: 7,
             expected: .refused(.delivered(run: 7, hook: "gh", delivery: "d1"))),
        Case(name: "a schedule slot in flight: joined", slot: held, phases: [1: .loading], scheduledRun: 1, expected: .shared(.joined(1))),
        Case(name: "a schedule slot that ran: nothing runs, whatever the policy", policy: .replace, phases: [3: .success],
             scheduledRun: 3, expected: .shared(.slotRan(3))),
        Case(name: "debounced, a pending run: joins it and pushes its window", debounce: .seconds(5), slot: held,
             phases: [1: .queued], windows: [1: window], expected: .debounced(run: 1, window: pushed)),
        Case(name: "debounced, a pending run inside the cooldown: still joins it", cooldown: .seconds(60), debounce: .seconds(5), slot: held,
             phases: [1: .queued], windows: [1: window], lastSuccess: .init(run: 9, at: Timestamp(rawValue: 99_000_000)),
             expected: .debounced(run: 1, window: pushed)),
        Case(name: "debounced, nothing pending: a new run with a window", debounce: .seconds(5),
             expected: .created(.created(50), window: DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Case.now))),
        Case(name: "a join of a run made from another definition: refused", policy: .join, slot: held, phases: [1: .loading],
             definitions: [1: "another"], expected: .refused(.definitionMismatch(run: 1, action: "deploy", host: "web-2"))),
    ]

    static let hourly = RateLimit(runs: 2, per: .seconds(3_600))
    static let full = KeyDecision.Rate(limit: hourly, next: Timestamp(rawValue: 700_000_000))
    static let delayed = KeyDecision.Rate(limit: RateLimit(runs: 2, per: .seconds(3_600), over: .delay), next: Timestamp(rawValue: 700_000_000))
    static let rated: [Case] = [
        Case(name: "over the rate limit (reject): refused rate_limited with when a run may start", rate: full,
             expected: .rateLimited(hourly, next: Timestamp(rawValue: 700_000_000))),
        Case(name: "over the rate limit, a queue behind a run: the follow-up would be over it: refused", policy: .queue,
             slot: KeySlot(holder: 1), phases: [1: .loading], rate: full, expected: .rateLimited(hourly, next: Timestamp(rawValue: 700_000_000))),
        Case(name: "over the rate limit, a replace: refused, and the run in flight goes on", policy: .replace,
             slot: KeySlot(holder: 1), phases: [1: .loading], rate: full, expected: .rateLimited(hourly, next: Timestamp(rawValue: 700_000_000))),
        Case(name: "over the rate limit, a join: shares the run in flight (it makes none)", policy: .join,
             slot: KeySlot(holder: 1), phases: [1: .loading], rate: full, expected: .shared(.joined(1))),
        Case(name: "over the rate limit, a busy key under reject: busy first (no run would be made)",
             slot: KeySlot(holder: 1), phases: [1: .loading], rate: full, expected: .shared(.rejected(1))),
        Case(name: "over the rate limit inside the cooldown: the success answers", cooldown: .seconds(10),
             lastSuccess: .init(run: 9, at: Timestamp(rawValue: 95_000_000)), rate: full, expected: .shared(.cooled(9))),
        Case(name: "paused and over the rate limit: the pause refuses", paused: ActionPause(action: "deploy", by: "alice", reason: "r", at: Case.now),
             rate: full, expected: .paused(ActionPause(action: "deploy", by: "alice", reason: "r", at: Case.now), skipped: false)),
        Case(name: "under the rate limit: runs", rate: KeyDecision.Rate(limit: hourly, next: nil), expected: .created(.created(50), window: nil)),
        Case(name: "over the rate limit (delay): the run is made, and waits for its start to fit", rate: delayed,
             expected: .created(.created(50), window: nil)),
        Case(name: "full only with the key's runs not yet started, a replace: it stops them, so its run fits: replaces",
             policy: .replace, slot: KeySlot(holder: 1), phases: [1: .queued],
             rate: KeyDecision.Rate(limit: hourly, next: Timestamp(rawValue: 700_000_000), nextReplacing: nil),
             expected: .created(.replaced(50, stopping: [1]), window: nil)),
    ]

    @Test("the engine decides each rule once", arguments: cases + rated)
    func engine(_ row: Case) {
        var slot = row.slot
        #expect(KeyDecision.decide(KeyDecision.Asked(row.trigger), row.view, slot: &slot, candidate: { Case.candidate }) == row.expected)
    }

    @Test("the fleet's batch decides the same on the rows it reads (a rate limit's rows are FleetRates' own)", arguments: cases.filter { $0.rate == nil })
    func fleet(_ row: Case) {
        let draft = TriggerBatch.decide([TriggerBatch.Entry(trigger: row.trigger)], row.rows, me: "me")
        let decided = draft.taking(draft.ids == 0 ? [] : [Case.candidate])
        let got: KeyDecision? = switch decided.outcomes.first {
        case let .refused(error): .refused(error)
        case let .denied(.paused(pause), record): .paused(pause, skipped: record == .skipped)
        case .denied, .needRefused: nil
        case let .shared(decision): .shared(decision)
        case let .debounced(run): decided.windows[run].map { .debounced(run: run, window: $0) }
        case let .created(decision, window): .created(decision, window: window)
        case nil: nil
        }
        #expect(got == row.expected)
    }

    @Test("a new run's queued detail says what it replaces or follows, where it came from and its window")
    func queuedDetail() {
        let replaced = KeyDecision.queuedDetail(.replaced(5, stopping: [3, 4]), via: "hook", window: nil)
        #expect(replaced.replaces == [3, 4] && replaced.reason == "replace" && replaced.via == "hook")
        let followUp = KeyDecision.queuedDetail(.followUp(5, after: 3), via: nil, window: Self.window)
        #expect(followUp.reason == "follow-up of run 3" && followUp.debounce == Self.window.deadline.rawValue)
        #expect(KeyDecision.queuedDetail(.created(5), via: nil, window: nil) == TransitionDetail())
    }
}

/// What a store that keeps its keys in rows asks the engine between triggers (`KeyDecision+Rows`):
/// which run a debounced trigger shares, and whether a queued run may start.
@Suite("KeyDecision: a key's rows between triggers")
struct KeyDecisionRowsTests {
    static let window = DebounceWindow(window: .seconds(5), maxWait: .seconds(60), first: Timestamp(rawValue: 1),
                                       deadline: Timestamp(rawValue: 5_000_001))

    struct Pending: Sendable, CustomTestStringConvertible {
        var name: String
        var slot: KeySlot
        var windows: [Int64]
        var started: [Int64] = []
        var shares: Int64?
        var testDescription: String { name }
    }

    static let pendings: [Pending] = [
        Pending(name: "an empty key: none", slot: KeySlot(), windows: [], shares: nil),
        Pending(name: "the holder in its window", slot: KeySlot(holder: 1), windows: [1], shares: 1),
        Pending(name: "a holder without a window: none", slot: KeySlot(holder: 1), windows: [], shares: nil),
        Pending(name: "a holder that started: none", slot: KeySlot(holder: 1), windows: [1], started: [1], shares: nil),
        Pending(name: "the follow-up when the holder runs", slot: KeySlot(holder: 1, followUp: 2), windows: [2], started: [1], shares: 2),
        Pending(name: "the holder before the follow-up", slot: KeySlot(holder: 1, followUp: 2), windows: [1, 2], shares: 1),
        Pending(name: "a line: the first in line order with a window", slot: KeySlot(holder: 1, line: [2, 3, 4]), windows: [3, 4],
                started: [1], shares: 3),
        Pending(name: "a run being replaced is not shared", slot: KeySlot(holder: 1, followUp: 2, draining: [1]), windows: [1],
                shares: nil),
    ]

    @Test("the run a debounced trigger shares", arguments: pendings)
    func pending(_ row: Pending) {
        let windows = Dictionary(uniqueKeysWithValues: row.windows.map { ($0, Self.window) })
        let pending = KeyDecision.pending(in: row.slot, windows: windows, started: { row.started.contains($0) })
        #expect(pending?.run == row.shares)
        #expect(pending.map { $0.window == Self.window } ?? true)
    }

    /// Each case of `KeyDecision.mayStart`, stated once: a host's `FlightTable` and every start
    /// path of a fleet (`StartColumns`, `StartRowTests` runs this table through its rows) decide with it.
    struct Start: Sendable, CustomTestStringConvertible {
        var name: String
        var view: KeyDecision.StartView
        var verdict: KeyDecision.StartVerdict
        var testDescription: String { name }

        init(_ name: String, phase: Phase = .queued, slot: KeySlot = KeySlot(holder: 7), passed: Bool = true, paused: Bool = false,
             rateHeld: Bool = false, approving: Bool = false, needs: KeyDecision.StartView.Needs = .met, _ verdict: KeyDecision.StartVerdict) {
            self.name = name
            view = KeyDecision.StartView(run: 7, phase: phase, slot: slot, windowPassed: passed, paused: paused, rateHeld: rateHeld,
                                         approving: approving, needs: needs)
            self.verdict = verdict
        }
    }

    static let starts: [Start] = [
        Start("the holder, queued, its window passed", .start),
        Start("not inside its window", passed: false, .wait(.window)),
        Start("not the follow-up", slot: KeySlot(holder: 6, followUp: 7), .wait(.key)),
        Start("not waiting in a line", slot: KeySlot(holder: 6, line: [5, 7]), .wait(.key)),
        Start("not while a replaced run drains", slot: KeySlot(holder: 7, draining: [6]), .wait(.key)),
        Start("not once it left queued", phase: .loading, .end(.notQueued)),
        Start("not when the key forgot it (cancelled)", phase: .cancelled, slot: KeySlot(), .end(.notQueued)),
        Start("not while its action is paused", paused: true, .wait(.paused)),
        Start("not while it waits for its approval", approving: true, .wait(.approval)),
        Start("not while it waits for its approval, paused too: the pause says", paused: true, approving: true, .wait(.paused)),
        Start("not while its rate limit holds it back", rateHeld: true, .wait(.rate)),
        Start("not while it waits for its needs", needs: .waiting, .wait(.needs)),
        Start("never once a need failed", needs: .failed, .end(.needFailed)),
        Start("never once a need failed, whoever holds the key", slot: KeySlot(holder: 6, followUp: 7), needs: .failed, .end(.needFailed)),
        Start("its window passed but its rate held: the rate says", rateHeld: true, .wait(.rate)),
    ]

    @Test("whether a queued run may start", arguments: starts)
    func mayStart(_ row: Start) {
        #expect(KeyDecision.mayStart(row.view) == row.verdict)
    }
}

/// Recovery takes a queued run back with the decision a live `queue` trigger of its key gets
/// (`KeyDecision.recover`). Each row is a key's slot, its line's depth, and the live trigger's
/// decision; recovery must take the run back where the live trigger makes a run (the same
/// decision, the same slot after), and supersede it where the live trigger would share one.
@Suite("KeyDecision: recovery decides as a live trigger")
struct KeyDecisionRecoveryTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var slot: KeySlot
        var depth = 1
        var live: FlightTable.Decision
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a free key: it holds it", slot: KeySlot(), live: .created(50)),
        Row(name: "a free key, a replaced run draining: it holds it", slot: KeySlot(draining: [3]), live: .created(50)),
        Row(name: "held: it follows the holder", slot: KeySlot(holder: 1), live: .followUp(50, after: 1)),
        Row(name: "held with a follow-up, a line of one: superseded (a live trigger coalesces)", slot: KeySlot(holder: 1, followUp: 2),
            live: .coalesced(2)),
        Row(name: "a line with room: at its end", slot: KeySlot(holder: 1, line: [2, 3]), depth: 3, live: .followUp(50, after: 3)),
        Row(name: "a full line: superseded (a live trigger is refused busy)", slot: KeySlot(holder: 1, line: [2, 3]), depth: 2,
            live: .rejected(1, line: 2)),
    ]

    @Test("recovery takes a run back where a live queue trigger makes one, and supersedes it where that trigger shares", arguments: rows)
    func recovery(_ row: Row) {
        var action = Action(name: "deploy", exec: ["true"])
        action.queueDepth = row.depth
        // The action's own policy does not matter: a run left queued is queued again.
        action.policy = .reject
        let now = Timestamp(rawValue: 100_000_000)
        var liveSlot = row.slot
        let live = KeyDecision.decide(KeyDecision.Asked(action: action, policy: .queue), KeyDecision.View(slot: row.slot, now: now),
                                      slot: &liveSlot, candidate: { 50 })
        var recoveredSlot = row.slot
        let recovered = KeyDecision.recover(50, of: action, slot: &recoveredSlot, at: now)
        switch live {
        case let .created(decision, _):
            #expect(decision == row.live)
            #expect(recovered == decision)
        case let .shared(decision):
            #expect(decision == row.live)
            #expect(recovered == nil)
        default:
            Issue.record("a queue trigger on a slot alone decided \(live)")
        }
        #expect(recoveredSlot == liveSlot)
    }
}
