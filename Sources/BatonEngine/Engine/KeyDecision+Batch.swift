/// Triggers that a store decides together, in one transaction, from the rows it read while it
/// holds their keys (the fleet's trigger batch): the engine's one step for them
/// (`KeyDecision.batch`), so that the store reads rows, calls this once and performs what it
/// answers. Each trigger is decided by `KeyDecision.decide` on its key's `KeyFacts`, as one
/// machine decides it, against what the triggers before it in the batch left of its key: a run
/// one of them created is the key's holder for the next, a delivery or a schedule slot one of
/// them recorded is found by the next, a window one of them opened or pushed is the one the next
/// joins, a queued run a replace stopped has ended (`StopDecision`, `KeyFacts.ended`).
///
/// Which runs start is decided after every trigger (`Decided.starts`, `KeyDecision.admitStart`):
/// a new run starts in the transaction only if it still holds its key, free, once the whole batch
/// is decided (a replace later in the batch may have stopped it), never with a debounce window
/// open, and each start counts in its rate bucket for the next.
extension KeyDecision {
    public enum Batch {
        /// One trigger of the batch; `startIfFree` false: decided again after its start was refused.
        public struct Entry: Sendable {
            public var trigger: Trigger
            public var startIfFree: Bool
            public init(trigger: Trigger, startIfFree: Bool = true) {
                self.trigger = trigger
                self.startIfFree = startIfFree
            }
        }

        /// A delivery's identity (the address it came from is not part of it).
        public struct DeliveryID: Hashable, Sendable {
            public var hook: String
            public var id: String
            public init(hook: String, id: String) {
                self.hook = hook
                self.id = id
            }
        }

        /// What the transaction read once it held the keys' rows.
        public struct Rows: Sendable, Equatable {
            /// The database's clock, read after the rows were locked: cooldowns and windows are decided on it.
            public var now: Timestamp
            /// The store's host's clock when the rows were read: what the batch's rows are stamped
            /// with (the runs it creates, starts and stops alike, so a replaced run never ends before
            /// its replacement is queued); `now` where not set.
            public var stamp: Timestamp?
            public var slots: [String: KeySlot]
            /// The keys' holders and follow-ups, and the schedule slots' runs.
            public var runs: [Int64: KeyFacts.Run]
            /// Each key's last success: its run and when it ended.
            public var lastSuccess: [String: LastSuccess]
            /// The open (or due) windows of the keys' queued debounced runs.
            public var windows: [Int64: DebounceWindow]
            /// The runs recorded deliveries made or joined.
            public var deliveries: [DeliveryID: Int64]
            /// The runs schedule slots made.
            public var slotRuns: [SlotBook.Slot: Int64]
            /// The pauses of the batch's actions, whether or not they hold now.
            public var pauses: [String: ActionPause]
            /// The rate-limited buckets of the batch's triggers, read under their locks.
            public var rates: [String: RateBucket]

            public init(now: Timestamp, stamp: Timestamp? = nil, slots: [String: KeySlot] = [:], runs: [Int64: KeyFacts.Run] = [:],
                        lastSuccess: [String: LastSuccess] = [:], windows: [Int64: DebounceWindow] = [:], deliveries: [DeliveryID: Int64] = [:],
                        slotRuns: [SlotBook.Slot: Int64] = [:], pauses: [String: ActionPause] = [:], rates: [String: RateBucket] = [:]) {
                self.now = now
                self.stamp = stamp
                self.slots = slots
                self.runs = runs
                self.lastSuccess = lastSuccess
                self.windows = windows
                self.deliveries = deliveries
                self.slotRuns = slotRuns
                self.pauses = pauses
                self.rates = rates
            }
        }

        /// What became of one trigger.
        public enum Outcome: Sendable, Equatable {
            /// Answered with an error and nothing written: its delivery made a run already, or the
            /// run it would share was made from another definition of its action.
            case refused(BatonError)
            /// Refused by a rule about the action's runs (paused, rate limited), with the record
            /// written against no run (`paused`, `skipped`, `rate limited`), as on one machine.
            case denied(BatonError, TriggerRecord.Decision)
            /// Refused before anything was stopped or made, for a need that would be refused
            /// (`needRefusal`: the needed action paused, over its rate, a param refused): answered
            /// with the need's error, its refusal recorded against the needed action where it is
            /// recorded (`NeedRefusal.record`), as on one machine.
            case needRefused(NeedRefusal)
            /// It shares a run (joined, coalesced, rejected, cooled, or its slot ran): its record.
            case shared(FlightTable.Decision)
            /// It joined its key's pending debounced run, whose window it pushed back (`windows`).
            case debounced(run: Int64)
            /// It made a run (created, follow-up, replacing): the run's row and `queued`.
            case created(FlightTable.Decision, window: DebounceWindow?)
        }

        /// The batch's decision: what the store writes, notifies and answers.
        public struct Decided: Sendable, Equatable {
            /// One per entry, in order.
            public var outcomes: [Outcome] = []
            /// The stops each replacing entry asked, by entry index (the engine's `StopDecision`).
            public var stops: [Int: [RunStop]] = [:]
            /// The slots the batch changed, as it left them.
            public var slots: [String: KeySlot] = [:]
            /// Windows to keep in runs' rows: new ones and pushed ones, as the batch left them.
            public var windows: [Int64: DebounceWindow] = [:]
            /// The new runs that may start in this transaction (their key is free, their action not
            /// held by a pause: `--hold`, their rate bucket lets them), in entry order.
            public var starts: [Int64] = []
            /// What the batch's rows are stamped with (`Rows.stamp`).
            public var stamp: Timestamp?
            /// The definition (`Action.fingerprint`) each new run is made from, for its row.
            public var definitions: [Int64: String] = [:]

            public init() {}
        }
    }

    /// Decides `entries` in order against `rows`: the batch's one step, run once. Its new runs
    /// are numbered in the order they are made with ids that sort after every run the rows hold
    /// (`Batch.Draft`); the store takes as many ids as the draft asks (`Draft.ids`) and numbers
    /// it (`Draft.taking`). `me` is the store's own owner name (a fleet host's incarnation);
    /// `fingerprint` gives an action's fingerprint, asked only where a decision compares or
    /// records one.
    public static func batch(_ entries: [Batch.Entry], _ rows: Batch.Rows, me: String, fingerprint: (Action) -> String) -> Batch.Draft {
        var state = rows
        var decided = Batch.Decided()
        decided.stamp = rows.stamp ?? rows.now
        var made: Int64 = 0
        var created: [(run: Int64, key: String, entry: Batch.Entry, window: DebounceWindow?)] = []
        for (index, entry) in entries.enumerated() {
            let before = made
            let outcome = batchOne(entry, &state, &decided, fingerprint, index: index, me: me, candidate: {
                made += 1
                return Batch.Draft.first + made - 1
            })
            decided.outcomes.append(outcome)
            if case let .created(decision, window) = outcome {
                created.append((decision.run, entry.trigger.key, entry, window))
            } else {
                // A trigger its need refused took an id for the run it did not make: the next one takes it.
                made = before
            }
        }
        // A new run's start (`admitStart`), on its key as the batch left it (no slot: it does not
        // start); a trigger decided again after its start was refused does not start here.
        decided.starts = created.filter { made in
            let trigger = made.entry.trigger
            guard made.entry.startIfFree, let slot = state.slots[made.key] else { return false }
            return admitStart(made.run, of: trigger.action, key: made.key, slot: slot, window: made.window,
                              pause: state.pauses[trigger.action.name], buckets: &state.rates, at: state.now)
        }.map(\.run)
        return Batch.Draft(decided, ids: Int(made))
    }

    /// One trigger against the batch's state so far, which it updates: `decide` on the facts the
    /// rows give; the batch keeps what the decision wrote.
    private static func batchOne(_ entry: Batch.Entry, _ state: inout Batch.Rows, _ decided: inout Batch.Decided,
                                 _ fingerprint: (Action) -> String, index: Int, me: String, candidate: () -> Int64) -> Batch.Outcome {
        let trigger = entry.trigger
        let delivery = trigger.delivery.map { Batch.DeliveryID(hook: $0.hook, id: $0.id) }
        let slotKey = trigger.slot.map { SlotBook.Slot(action: trigger.action.name, at: $0) }
        var slot = state.slots[trigger.key] ?? KeySlot()
        let decision = decide(Asked(trigger), facts(trigger, slot, delivery, slotKey, state), slot: &slot,
                              candidate: candidate, fingerprint: { fingerprint(trigger.action) })
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
            // A need that would be refused refuses the trigger before anything is stopped or made,
            // decided on the needed keys as the batch left them.
            if !trigger.action.needs.isEmpty,
               let refusal = needRefusal(trigger.action, params: trigger.params, at: state.now, facts: { key, action in
                   facts(action, key: key, state.slots[key] ?? KeySlot(), delivered: nil, slotRun: nil, state)
               }, fingerprint: fingerprint) {
                return .needRefused(refusal)
            }
            let run = made.run
            let definition = fingerprint(trigger.action)
            decided.definitions[run] = definition
            state.runs[run] = KeyFacts.Run(phase: .queued, lastSeq: 1, owner: me, definition: definition, host: nil, params: trigger.params)
            if let window { state.windows[run] = window; decided.windows[run] = window }
            if let delivery { state.deliveries[delivery] = run }
            if let slotKey { state.slotRuns[slotKey] = run }
            if let claim = trigger.action.rateClaim(key: trigger.key) { state.rates[claim.bucket]?.waiting[run] = .init(key: trigger.key) }
            if case let .replaced(_, stopping) = made {
                let stops = stopping.compactMap { RunStop.decide($0, .replaced(by: run), state.runs[$0], slot: &slot, me: me, at: state.stamp ?? state.now) }
                for case let end? in stops.map(\.end) { KeyFacts.ended(end, runs: &state.runs, buckets: &state.rates) }
                decided.stops[index] = stops
            }
            state.slots[trigger.key] = slot
            decided.slots[trigger.key] = slot
            return .created(made, window: window)
        }
    }

    /// What the rows say of the trigger's key, as the batch left it (`KeyFacts`).
    private static func facts(_ trigger: Trigger, _ slot: KeySlot, _ delivery: Batch.DeliveryID?, _ slotKey: SlotBook.Slot?,
                              _ state: Batch.Rows) -> KeyFacts {
        facts(trigger.action, key: trigger.key, slot, delivered: delivery.flatMap { state.deliveries[$0] }, slotRun: slotKey.flatMap { state.slotRuns[$0] },
              state)
    }

    /// What the rows say of `key` of `action` (a trigger's, or a need's), as the batch left it;
    /// the rate as the engine's rule answers from the bucket's rows (`RateBucket.rate`).
    private static func facts(_ action: Action, key: String, _ slot: KeySlot, delivered: Int64?, slotRun: Int64?, _ state: Batch.Rows) -> KeyFacts {
        let claim = action.rateClaim(key: key)
        return KeyFacts(slot: slot, now: state.now, runs: state.runs, windows: state.windows, delivered: delivered, slotRun: slotRun,
                        lastSuccess: state.lastSuccess[key], pause: state.pauses[action.name],
                        rate: claim.flatMap { claim in state.rates[claim.bucket]?.rate(claim, key: key, at: state.now) })
    }
}
