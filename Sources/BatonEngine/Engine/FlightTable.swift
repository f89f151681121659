/// The single-flight bookkeeping as a pure value: which run holds each key, its follow-up,
/// the first-in-first-out line of runs waiting for a worker slot, and the locks between actions
/// (`LockBook`) that a ready run takes, all at once, before it counts as running.
///
/// Invariants: a key has at most one holder and at most its action's queue depth of follow-ups; a run is `ready` only
/// when it holds its key, its `queued` transition is durable, no replaced run of its key is
/// still draining, and it is not gated (a debounced run in its window); at most `limit` runs are `running`, each holding every lock it claims.
public struct FlightTable: Sendable {
    /// What a trigger did, decided against the key's runs in flight.
    public enum Decision: Sendable, Equatable {
        /// No run in flight: the new run holds the key.
        case created(Int64)
        /// `queue`: the new run joins the key's line of follow-ups, behind `after` (the holder, or the last in line).
        case followUp(Int64, after: Int64)
        /// `join`: the trigger shares the run in flight.
        case joined(Int64)
        /// `queue`: the trigger shares a follow-up already waiting (the one of a line of one, or
        /// the entry with the trigger's params).
        case coalesced(Int64)
        /// `reject`: the key is busy with this run; `queue` with its line full: `line` runs wait.
        case rejected(Int64, line: Int? = nil)
        /// `replace`: the new run holds the key; the runs listed must be stopped.
        case replaced(Int64, stopping: [Int64])
        /// `cooldown`: the key succeeded with this run within the action's window; nothing runs.
        case cooled(Int64)
        /// `--scheduled`: the trigger's slot already has this run, ended; nothing runs.
        case slotRan(Int64)
    }

    /// Where a run stands in the table.
    public enum Stage: Sendable, Equatable {
        case waiting, ready, running
    }

    struct Entry {
        var key: String
        /// Its action's name: a paused action's runs wait (`hold`).
        var action = ""
        var stage: Stage = .waiting
        var durable = false
        /// A debounced run whose window is open: it may not start yet (`gate`, `open`).
        var gated = false
        /// The rate limit its start counts against (`rateLimit`), and, while a start does not
        /// fit under it, when one may (`rateOpen` lets it go then).
        var rate: RateClaim?
        var rateUntil: Timestamp?
        /// A run waiting for the runs it needs (`await`, `needsMet`): it may not start yet.
        var awaiting = false
        /// A run waiting for its approval (`awaitApproval`, `approved`): it may not start yet.
        var approving = false
    }

    private var slots: [String: KeySlot] = [:]
    private var entries: IDMap<Int64, Entry> = [:]
    private var line = RunLine()
    private var runningCount = 0
    /// The actions whose runs may not start now (paused): their runs wait until `release`.
    public private(set) var held: Set<String> = []
    /// The locks runs hold and wait for.
    public private(set) var locks = LockBook()
    /// The recent starts of each rate-limited key or action.
    public private(set) var rates = RateBook()
    /// The runs `admit` held back for their rate limit since `takeRateHolds`, with when each may start.
    private var rateHolds: [(run: Int64, until: Timestamp)] = []
    /// The most runs that may be loading or retrying at once.
    public var limit: Int

    public init(limit: Int) {
        self.limit = max(limit, 1)
    }

    /// The key's slot as it stands (empty when nothing holds it): what `KeyDecision` decides on,
    /// for a live trigger (`decide`) and for a run recovery takes back (`recover`) alike.
    public func slot(of key: String) -> KeySlot { slots[key] ?? KeySlot() }

    /// Takes a decision made on `slot(of: key)`: the key's slot as the decision left it, and a
    /// new run's entry, holding `locks` (of `action`) once it starts, gated when it debounces.
    public mutating func apply(_ decision: Decision, key: String, slot: KeySlot, action: String = "", locks claims: [LockClaim] = [],
                               gated: Bool = false, rate: RateClaim? = nil) {
        switch decision {
        case let .created(run), let .followUp(run, _), let .replaced(run, _):
            slots[key] = slot
            entries[run] = Entry(key: key, action: action, gated: gated, rate: rate)
            locks.register(run, action: action, locks: claims)
        case .joined, .coalesced, .rejected, .cooled, .slotRan: break
        }
    }

    /// Marks a run's creation (its `queued` transition) as durable: from now on it may start.
    public mutating func markDurable(_ run: Int64) {
        guard entries[run] != nil else { return }
        entries[run]!.durable = true
        promote(entries[run]!.key)
    }

    /// Holds back a run that has not started (a debounced run whose window opens again): it
    /// leaves the line and the lock waiters until `open`.
    public mutating func gate(_ run: Int64) {
        guard let entry = entries[run], entry.stage != .running else { return }
        entries[run]!.gated = true
        entries[run]!.stage = .waiting
        locks.unwait(run)
    }

    /// Lets a gated run start once its key is free and its creation durable (its window is over).
    public mutating func open(_ run: Int64) {
        guard entries[run]?.gated == true else { return }
        entries[run]!.gated = false
        promote(entries[run]!.key)
    }

    /// Holds back every run of `action` not yet started (its action is paused): a ready one leaves
    /// the line and the lock waiters, and none becomes ready until `release`.
    public mutating func hold(action: String) {
        held.insert(action)
        for (run, entry) in entries where entry.action == action && entry.stage == .ready {
            entries[run]!.stage = .waiting
            locks.unwait(run)
        }
    }

    /// Lets the runs of `action` start again (its pause is over), each once its key is free.
    public mutating func release(action: String) {
        guard held.remove(action) != nil else { return }
        // Key by key in the order of their oldest run: runs held by a pause start in trigger order.
        var oldest: [String: Int64] = [:]
        for (run, entry) in entries where entry.action == action { oldest[entry.key] = min(oldest[entry.key] ?? run, run) }
        for (key, _) in oldest.sorted(by: { $0.value < $1.value }) { promote(key) }
    }

    /// Holds back a run not yet started until the runs it needs succeeded (`needsMet`): it leaves
    /// the line and the lock waiters meanwhile.
    public mutating func await(_ run: Int64) {
        guard let entry = entries[run], entry.stage != .running else { return }
        entries[run]!.awaiting = true
        entries[run]!.stage = .waiting
        locks.unwait(run)
    }

    /// The runs `run` needs all succeeded: it starts once its key is free and its creation durable.
    public mutating func needsMet(_ run: Int64) {
        guard entries[run]?.awaiting == true else { return }
        entries[run]!.awaiting = false
        promote(entries[run]!.key)
    }

    /// Holds back a run not yet started until it is approved (`approved`), as `await` does.
    public mutating func awaitApproval(_ run: Int64) {
        guard let entry = entries[run], entry.stage != .running else { return }
        entries[run]!.approving = true
        entries[run]!.stage = .waiting
        locks.unwait(run)
    }

    /// The run is approved: it starts once nothing else holds it back.
    public mutating func approved(_ run: Int64) {
        guard entries[run]?.approving == true else { return }
        entries[run]!.approving = false
        promote(entries[run]!.key)
    }

    /// Whether a run waits for its approval.
    public func isApproving(_ run: Int64) -> Bool { entries[run]?.approving ?? false }

    /// Whether a run waits for the runs it needs (`await`).
    public func isAwaiting(_ run: Int64) -> Bool { entries[run]?.awaiting ?? false }

    /// Whether a run is held back by `gate`.
    public func isGated(_ run: Int64) -> Bool { entries[run]?.gated ?? false }

    /// Counts a run the fleet started (its key taken in the fleet's database) as running here.
    public mutating func adoptRunning(_ run: Int64, key: String, action: String? = nil, locks claims: [LockClaim] = []) {
        guard entries[run] == nil else { return }
        if let action { locks.hold(run, action: action, locks: claims) }
        var slot = slots[key] ?? KeySlot()
        if slot.holder == nil { slot.holder = run } else { slot.draining.insert(run) }
        slots[key] = slot
        entries[run] = Entry(key: key, stage: .running, durable: true)
        runningCount += 1
    }

    /// Whether a run is being replaced: it stops, and its key waits for its processes to go.
    public func isDraining(_ run: Int64) -> Bool {
        guard let key = entries[run]?.key else { return false }
        return slots[key]?.draining.contains(run) ?? false
    }

    /// The runs to start now, in the order they became ready, each with every lock it claims
    /// taken; each is counted as running. A ready run whose locks are not all free waits for
    /// them, in order: the runs waiting for locks became ready before any run still in the line.
    /// A run whose start does not fit under its rate limit at `now` is held back instead
    /// (`takeRateHolds` says until when); without `now`, rate limits are not applied.
    public mutating func admit(at now: Timestamp? = nil) -> [Int64] {
        var admitted: [Int64] = []
        var reserved: [String: Int] = [:]
        for run in locks.waiting {
            guard runningCount < limit else { return admitted }
            if admit(run, at: now, reserved: &reserved) { admitted.append(run) }
        }
        while runningCount < limit, let run = line.popFirst() {
            guard entries[run]?.stage == .ready else { continue }
            if admit(run, at: now, reserved: &reserved) { admitted.append(run) }
        }
        return admitted
    }

    /// A ready run asks to start: the engine's one hold-then-count (`RateBook.admit`, as a fleet's
    /// bucket asks it), behind its bucket's runs held already, with its locks as the rest of its
    /// start. Held back by its rate limit, it leaves the line and the lock waiters until
    /// `rateOpen`; started, it counts as running.
    private mutating func admit(_ run: Int64, at now: Timestamp?, reserved: inout [String: Int]) -> Bool {
        let claim = entries[run]?.rate
        let admission = rates.admit(run, claim, at: now, held: {
            entries.lazy.filter { $0.value.rate?.bucket == claim?.bucket && $0.value.rateUntil != nil }.map(\.key)
        }, starts: { locks.take(run, reserved: &reserved) })
        switch admission {
        case .started:
            entries[run]!.stage = .running
            runningCount += 1
            return true
        case let .held(until):
            entries[run]!.stage = .waiting
            entries[run]!.rateUntil = until
            locks.unwait(run)
            rateHolds.append((run, until))
            return false
        case .waits:
            return false
        }
    }

    /// The runs held back for their rate limit since the last call, with when each may start.
    public mutating func takeRateHolds() -> [(run: Int64, until: Timestamp)] {
        defer { rateHolds = [] }
        return rateHolds
    }

    /// Lets the runs held for the rate limit of `run`'s bucket whose time has come (by `now`)
    /// start once their keys are free, oldest first (each is checked again then).
    public mutating func rateOpen(_ run: Int64, at now: Timestamp) {
        guard let bucket = entries[run]?.rate?.bucket else { return }
        let due = entries.filter { $0.value.rate?.bucket == bucket && ($0.value.rateUntil.map { $0 <= now } ?? false) }.keys.sorted()
        for id in due {
            entries[id]!.rateUntil = nil
            promote(entries[id]!.key)
        }
    }

    /// When a run held for its rate limit may start; nil for a run not held so.
    public func rateUntil(of run: Int64) -> Timestamp? { entries[run]?.rateUntil }

    /// The rate a trigger of `key` under `claim` is decided with (`KeyDecision.Rate`, the rule a
    /// fleet's bucket answers with too): behind the bucket's runs not yet started, and, for a
    /// replace (which stops its key's runs not yet started), behind those of other keys only.
    public func rate(_ claim: RateClaim, key: String, at now: Timestamp) -> KeyDecision.Rate {
        var waiting = 0, others = 0
        for entry in entries.values where entry.rate?.bucket == claim.bucket && entry.stage != .running {
            waiting += 1
            if entry.key != key { others += 1 }
        }
        return KeyDecision.Rate(claim, book: rates, at: now, waiting: waiting, waitingOtherKeys: others)
    }

    /// A start the history kept (at start): counted as if this table had seen it.
    public mutating func rememberStart(_ claim: RateClaim, at: Timestamp) { rates.record(claim, at: at) }

    /// Forgets a run that has ended (its terminal transition recorded, its processes gone),
    /// handing its key to the follow-up or to the replacing run.
    public mutating func ended(_ run: Int64) {
        guard let entry = entries.removeValue(forKey: run) else { return }
        if entry.stage == .running { runningCount -= 1 }
        locks.release(run)
        guard var slot = slots[entry.key] else { return }
        slot.ended(run)
        if slot.isEmpty {
            slots[entry.key] = nil
        } else {
            slots[entry.key] = slot
            promote(entry.key)
        }
    }

    /// The stage of a run, or nil when the table does not know it.
    public func stage(of run: Int64) -> Stage? { entries[run]?.stage }

    /// The run that triggers of `key` see as in flight.
    public func holder(of key: String) -> Int64? { slots[key]?.holder }

    /// The first follow-up waiting behind the holder of `key`.
    public func followUp(of key: String) -> Int64? { slots[key]?.followUp }

    /// The follow-ups waiting behind the holder of `key`, in the order they start.
    public func line(of key: String) -> [Int64] { slots[key]?.line ?? [] }

    /// How many runs are loading or retrying.
    public var running: Int { runningCount }

    /// How many runs are ready to start and wait for a worker slot or a lock.
    public var readyCount: Int { entries.values.count { $0.stage == .ready } }

    private mutating func promote(_ key: String) {
        guard let slot = slots[key], let holder = slot.startable, let entry = entries[holder], entry.durable, entry.stage == .waiting else { return }
        // The rule a fleet's starts decide with too (`KeyDecision.mayStart`).
        let view = KeyDecision.StartView(run: holder, slot: slot, windowPassed: !entry.gated, paused: held.contains(entry.action),
                                         rateHeld: entry.rateUntil != nil, approving: entry.approving, needs: entry.awaiting ? .waiting : .met)
        guard KeyDecision.mayStart(view) == .start else { return }
        entries[holder]!.stage = .ready
        line.append(holder)
    }
}

/// A first-in-first-out line of run ids with O(1) append and pop.
struct RunLine: Sendable {
    private var storage: [Int64] = []
    private var head = 0

    mutating func append(_ run: Int64) { storage.append(run) }

    mutating func popFirst() -> Int64? {
        guard head < storage.count else { return nil }
        let run = storage[head]
        head += 1
        if head >= 1_024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return run
    }
}
