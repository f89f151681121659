import BatonCore

/// Triggers that arrived together on a host, decided in one transaction from the rows it read
/// while it holds their keys' slot rows: pure, so that a batch decides exactly what the same
/// triggers decided one transaction each, in the order they came. Each trigger is decided by
/// the engine's one entry (`KeyDecision.decide` on its key's `KeyFacts`), as one machine
/// decides it, against what the triggers before it in the batch left of its key: a run one of them created is the key's holder for the next, a delivery or
/// a schedule slot one of them recorded is found by the next, a window one of them opened or
/// pushed is the one the next joins, a queued run a replace stopped has ended.
///
/// Which runs start is decided after every trigger (`Decided.starts`): a new run starts in the
/// transaction only if it still holds its key, free, once the whole batch is decided (a replace
/// later in the batch may have stopped it), never with a debounce window open.
struct TriggerBatch {
    /// One trigger of the batch; `startIfFree` false: decided again after its start was refused.
    struct Entry: Sendable {
        var trigger: Trigger
        var startIfFree = true
    }

    /// What the transaction knows of a run a trigger may share, stop or compare definitions with.
    typealias RunFacts = KeyFacts.Run

    /// What the transaction read once it held the keys' rows.
    struct Rows: Sendable, Equatable {
        /// The database's clock, read after the rows were locked: cooldowns and windows are decided on it.
        var now: Timestamp
        /// This host's clock when the rows were read: what the batch's rows are stamped with (the
        /// runs it creates, starts and stops alike, so a replaced run never ends before its
        /// replacement is queued); `now` where not set.
        var stamp: Timestamp?
        var slots: [String: KeySlot] = [:]
        /// The keys' holders and follow-ups, and the schedule slots' runs.
        var runs: [Int64: RunFacts] = [:]
        /// Each key's last success: its run and when it ended.
        var lastSuccess: [String: LastSuccess] = [:]
        /// The open (or due) windows of the keys' queued debounced runs.
        var windows: [Int64: DebounceWindow] = [:]
        /// The runs recorded deliveries made or joined.
        var deliveries: [DeliveryID: Int64] = [:]
        /// The runs schedule slots made.
        var slotRuns: [SlotBook.Slot: Int64] = [:]
        /// The pauses of the batch's actions (`FleetPauses`), whether or not they hold now.
        var pauses: [String: ActionPause] = [:]
        /// The rate-limited buckets of the batch's triggers, read under their locks (`FleetRates`).
        var rates: [String: RateBucket] = [:]
    }

    typealias LastSuccess = KeyDecision.LastSuccess

    /// A delivery's identity (the address it came from is not part of it).
    struct DeliveryID: Hashable, Sendable {
        var hook: String
        var id: String
    }

    /// What became of one trigger.
    enum Outcome: Sendable, Equatable {
        /// Answered with an error and nothing written: its delivery made a run already, or the
        /// run it would share was made from another definition of its action.
        case refused(BatonError)
        /// Refused by a rule about the action's runs (paused, rate limited), with the record
        /// written against no run (`paused`, `skipped`, `rate limited`), as on one machine.
        case denied(BatonError, TriggerRecord.Decision)
        /// It shares a run (joined, coalesced, rejected, cooled, or its slot ran): its record.
        case shared(FlightTable.Decision)
        /// It joined its key's pending debounced run, whose window it pushed back (`windows`).
        case debounced(run: Int64)
        /// It made a run (created, follow-up, replacing): the run's row and `queued`.
        case created(FlightTable.Decision, window: DebounceWindow?)
    }

    /// The batch's decision.
    struct Decided: Sendable, Equatable {
        /// One per entry, in order.
        var outcomes: [Outcome] = []
        /// The stops each replacing entry asked, by entry index (`FleetStop`: the engine's decision).
        var stops: [Int: [FleetStop]] = [:]
        /// The slots the batch changed, as it left them.
        var slots: [String: KeySlot] = [:]
        /// Windows to keep in runs' rows: new ones and pushed ones, as the batch left them.
        var windows: [Int64: DebounceWindow] = [:]
        /// The new runs that may start in this transaction (their key is free, their action not
        /// held by a pause: `--hold`), in entry order.
        var starts: [Int64] = []
        /// What the batch's rows are stamped with (`Rows.stamp`).
        var stamp: Timestamp?
        /// The definition (`Action.fingerprint`) each new run is made from, for its row.
        var definitions: [Int64: String] = [:]
    }

    /// Decides `entries` in order against `rows`; new runs take their ids from `ids` in order
    /// (`idsNeeded` says how many). `me` is this host's incarnation.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String, ids: [Int64]) -> Decided {
        var fingerprints = ActionFingerprints()
        return decide(entries, rows, me: me, ids: ids, fingerprints: &fingerprints)
    }

    /// The same, with the actions' fingerprints kept in `fingerprints` (computed only where a
    /// decision needs one), for both of a transaction's decisions.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String, ids: [Int64], fingerprints: inout ActionFingerprints) -> Decided {
        var state = rows
        var decided = Decided()
        decided.stamp = rows.stamp ?? rows.now
        var next = ids.makeIterator()
        var created: [(run: Int64, key: String, entry: Entry, window: DebounceWindow?)] = []
        for (index, entry) in entries.enumerated() {
            let outcome = decideOne(entry, &state, &decided, &fingerprints, index: index, me: me, candidate: { next.next() ?? 0 })
            decided.outcomes.append(outcome)
            if case let .created(decision, window) = outcome { created.append((decision.run, entry.trigger.key, entry, window)) }
        }
        // The engine's start of a new run (`KeyDecision.admitStart`), on its key as the batch left
        // it (no slot: it does not start); a trigger decided again after its start was refused
        // does not start here.
        decided.starts = created.filter { made in
            let trigger = made.entry.trigger
            guard made.entry.startIfFree, let slot = state.slots[made.key] else { return false }
            return KeyDecision.admitStart(made.run, of: trigger.action, key: made.key, slot: slot, window: made.window,
                                          pause: state.pauses[trigger.action.name], buckets: &state.rates, at: state.now)
        }.map(\.run)
        return decided
    }

    /// How many new runs `entries` make against `rows`: the ids to take before deciding.
    static func idsNeeded(_ entries: [Entry], _ rows: Rows, me: String) -> Int {
        var fingerprints = ActionFingerprints()
        return idsNeeded(entries, rows, me: me, fingerprints: &fingerprints)
    }

    /// The same, keeping the fingerprints it computed for the decision after it.
    static func idsNeeded(_ entries: [Entry], _ rows: Rows, me: String, fingerprints: inout ActionFingerprints) -> Int {
        decide(entries, rows, me: me, ids: (1...max(entries.count, 1)).map { -Int64($0) }, fingerprints: &fingerprints).outcomes.count {
            if case .created = $0 { return true }
            return false
        }
    }

    /// One trigger against the batch's state so far, which it updates: the engine decides
    /// (`KeyDecision`) on the view the rows give; the batch keeps what the decision wrote.
    private static func decideOne(_ entry: Entry, _ state: inout Rows, _ decided: inout Decided, _ fingerprints: inout ActionFingerprints,
                                  index: Int, me: String, candidate: () -> Int64) -> Outcome {
        let trigger = entry.trigger
        let delivery = trigger.delivery.map { DeliveryID(hook: $0.hook, id: $0.id) }
        let slotKey = trigger.slot.map { SlotBook.Slot(action: trigger.action.name, at: $0) }
        var slot = state.slots[trigger.key] ?? KeySlot()
        let decision = KeyDecision.decide(KeyDecision.Asked(trigger), facts(trigger, slot, delivery, slotKey, state), slot: &slot,
                                          candidate: candidate, fingerprint: { fingerprints.of(trigger.action) })
        switch decision {
        case let .refused(error):
            return .refused(error)
        case let .paused(pause, _):
            return .denied(.paused(pause), decision.record ?? .paused)
        case let .rateLimited(limit, next):
            return .denied(.rateLimited(action: trigger.action.name, limit: limit, next: next), .rateLimited)
        case let .shared(shared):
            if case .rejected = shared {} else if let delivery { state.deliveries[delivery] = shared.run }
            return .shared(shared)
        case let .debounced(run, window):
            state.windows[run] = window
            decided.windows[run] = window
            if let delivery { state.deliveries[delivery] = run }
            return .debounced(run: run)
        case let .created(made, window):
            let run = made.run
            let definition = fingerprints.of(trigger.action)
            decided.definitions[run] = definition
            state.runs[run] = RunFacts(phase: .queued, lastSeq: 1, owner: me, definition: definition, host: nil,
                                       params: trigger.params)
            if let window { state.windows[run] = window; decided.windows[run] = window }
            if let delivery { state.deliveries[delivery] = run }
            if let slotKey { state.slotRuns[slotKey] = run }
            if let claim = trigger.action.rateClaim(key: trigger.key) { state.rates[claim.bucket]?.waiting[run] = .init(key: trigger.key) }
            if case let .replaced(_, stopping) = made {
                let stops = stopping.compactMap { FleetStop.decide($0, .replaced(by: run), state.runs[$0], slot: &slot, me: me, at: state.stamp ?? state.now) }
                for case let end? in stops.map(\.end) { KeyFacts.ended(end, runs: &state.runs, buckets: &state.rates) }
                decided.stops[index] = stops
            }
            state.slots[trigger.key] = slot
            decided.slots[trigger.key] = slot
            return .created(made, window: window)
        }
    }

    /// What the rows say of the trigger's key, as the batch left it: the engine's value, of which
    /// the engine makes its view (`KeyDecision.view`); the rate as the engine's rule answers from
    /// the bucket's rows (`RateBucket.rate`).
    private static func facts(_ trigger: Trigger, _ slot: KeySlot, _ delivery: DeliveryID?, _ slotKey: SlotBook.Slot?,
                              _ state: Rows) -> KeyFacts {
        let key = trigger.key
        let claim = trigger.action.rateClaim(key: key)
        return KeyFacts(slot: slot, now: state.now, runs: state.runs, windows: state.windows, delivered: delivery.flatMap { state.deliveries[$0] },
                        slotRun: slotKey.flatMap { state.slotRuns[$0] }, lastSuccess: state.lastSuccess[key], pause: state.pauses[trigger.action.name],
                        rate: claim.flatMap { claim in state.rates[claim.bucket]?.rate(claim, key: key, at: state.now) })
    }
}
