import BatonCore
import FoundationEssentials

/// Starting this host's runs: a start slot granted on the loop, then one transaction that holds the run's
/// key row, takes its locks (or its place in their line, `FleetLocks`) and writes its `loading`.
extension FleetCoordinator {
    /// A run this host claimed (its `loading` written), for the conductor to run.
    struct Claimed: Sendable, Equatable {
        var run: RunSnapshot
        var seq: Int
        var action: Action
        /// What a hook run is told of the run that fired it (`FleetHooks.context`).
        var hook: HookContext?
        /// Its secret params' values, where this host has them (`CoordinatorState.secrets`).
        var secrets: [String: String] = [:]
        /// A retrying run moved here (`resumeMoved`): when its next attempt is due, and the bytes
        /// of output its row holds. Nil: a start.
        var retryDue: Timestamp?
        var outputTotal: Int64?
    }

    /// What a start's transaction did with a queued run.
    enum Attempt {
        /// Its `loading` is written: the conductor runs it once this commits.
        case claimed(Claimed)
        /// A lock it claims is not free: it waits in line (`FleetLocks`), queued.
        case waits(LockWait)
        /// Not started: no longer startable here, or cancelled (its action is gone).
        case none

        var claimed: Claimed? {
            guard case let .claimed(claimed) = self else { return nil }
            return claimed
        }
    }

    /// In the caller's transaction (which holds the key's slot row, and has checked
    /// that the run holds a free key): takes the locks the run's action claims, all at once, or
    /// puts it in their line (`FleetLocks.acquire`, the lock rows locked after the key's), and
    /// writes `loading` for a queued run of this host, with the locks it took. `action` is the
    /// definition the run was triggered with (`definition(of:_:on:)`); a run with none
    /// (nil: its action is not configured here and no definition of it is stored) is cancelled
    /// instead (it would hold its key forever); one whose definition is `refused` (`lookUp`) ends
    /// `failure`, reason `definition`, and runs nothing.
    func claim(_ run: RunSnapshot, seq: Int, action: Action?, refused: String? = nil, on db: PGConnection) throws -> Attempt {
        if action == nil, let refused {
            let detail = TransitionDetail(reason: "definition", error: refused)
            _ = try FleetJournal.apply(Transition(runID: run.id, seq: seq + 1, from: .queued, to: .failure, at: .now, detail: detail),
                                       on: db, as: host)
            return .none
        }
        guard let action else {
            let detail = TransitionDetail(reason: "removed", error: "action \(run.action) is no longer configured on \(host.name)")
            _ = try FleetJournal.apply(Transition(runID: run.id, seq: seq + 1, from: .queued, to: .cancelled, at: .now, detail: detail),
                                       on: db, as: host)
            return .none
        }
        var detail = TransitionDetail(attempt: 1)
        if !action.locks.isEmpty {
            if let wait = try FleetLocks.acquire(run.id, action: action, limits: lockLimits(), on: db) { return .waits(wait) }
            detail.locks = action.locks.map(\.name)
        }
        let transition = Transition(runID: run.id, seq: seq + 1, from: .queued, to: .loading, at: .now, detail: detail)
        guard try FleetJournal.apply(transition, on: db, as: host) else { return .none }
        return .claimed(Claimed(run: run.applying(transition), seq: seq + 1, action: action, hook: try FleetHooks.context(of: run, on: db)))
    }

    /// Each lock's limit, from this host's actions (every host has the same `limits`).
    func lockLimits() -> [String: Int] {
        var limits: [String: Int] = [:]
        for action in conductor.configuredActions() { for claim in action.locks { limits[claim.name] = claim.limit } }
        return limits
    }

    /// Performs one of the state's effects, on the loop; `followers` are the callers of
    /// triggers whose runs are handed now.
    func perform(_ effect: CoordinatorState.Effect, followers: [Int64: Conductor.Follower] = [:]) {
        switch effect {
        case .granted:
            return
        case let .hand(claimed):
            // Its start slot is given back once the conductor counts it.
            var adopted = AdoptedRun(run: claimed.run, seq: claimed.seq, action: claimed.action, hook: claimed.hook, secrets: claimed.secrets)
            (adopted.retryDue, adopted.outputTotal) = (claimed.retryDue, claimed.outputTotal)
            conductor.adopt(adopted, follower: followers[claimed.run.id]) { [self] _ in reactor.onLoop { [self] in send(.counted) } }
        case .findReady:
            pool.submit({ [self] db in try findReady(on: db) }) { [self] result in
                if case let .failure(error) = result { log("queued runs could not be read: \(error)") }
                let (ready, held) = (try? result.get()) ?? ([], [])
                reactor.onLoop { [self] in send(.found(ready: ready, held: held, running: conductor.runningCount)) }
            }
        case let .start(ready, held, slots):
            pool.submit({ [self] db in
                var claimed: [Claimed] = []
                do { try startWaiting(ready, held: held, slots: slots, claimed: &claimed, on: db) } catch {
                    log("queued runs could not be started: \(error)")
                }
                return claimed
            }) { [self] result in
                let claimed = (try? result.get()) ?? []
                reactor.onLoop { [self] in send(.looked(granted: slots, claimed: claimed, running: conductor.runningCount)) }
            }
        case let .armTimer(id, after):
            _ = reactor.after(after) { [self] in send(.debounceFired(id, running: conductor.runningCount)) }
        case let .askNeeds(run, definition):
            askingNeeds(of: run, definition)
        }
    }

    /// Asks for start slots for a transaction that may start up to `wanted` runs (on the loop);
    /// each slot comes back when the transaction settles (`settled`) or its run is counted.
    func reserveStarts(_ wanted: Int) -> Int {
        guard wanted > 0 else { return 0 }
        for case let .granted(count) in send(.reserve(wanted: wanted, running: conductor.runningCount)) { return count }
        return 0
    }

    /// Asks for a look at this host's startable runs (a tick of the feed): on the loop, one look
    /// at a time, granted a start slot for each run it finds ready (`CoordinatorState`).
    func lookForStarts() {
        reactor.onLoop { [self] in send(.look(running: conductor.runningCount)) }
    }

    /// How a start went.
    enum Started {
        case started
        /// No start slot is free on this host.
        case noSlot
        /// It waits for a lock, in line.
        case waits
        /// Not startable (any more), or not yet.
        case notStartable
    }

    /// A look starts every run of this host that holds a free key, the runs in a lock's line
    /// first (in its order), then by id, while slots are free: those that may start together in
    /// one transaction (`start`). First its read, on the pool with no start slot held: it arms
    /// the debounced runs' timers (a debounced run is ready once its window has passed), and
    /// returns the runs that may start (as many as this host may run at once) and those a lock's
    /// line holds back (read first, `FleetLocks.waits`: not tried, their transaction would only
    /// find them so again).
    func findReady(on db: PGConnection) throws -> (ready: [Int64], held: [Int64]) {
        if conductor.configuredActions().contains(where: { $0.debounce != nil }) { try armDebounce(on: db) }
        let limits = lockLimits()
        let held = limits.isEmpty ? [] : Array(FleetLocks.waits(FleetLocks.rows(try db.query(FleetLocks.live(overlapping: nil)).rows),
                                                                limits: limits).keys)
        return (try ready(excluding: held, count: limit, on: db), held)
    }

    /// This host's queued runs that hold a free key and whose window passed, lock lines first;
    /// not those of a paused action, nor those waiting for their approval (which `start` would
    /// refuse, on every look, until it resumes or they are approved).
    /// Joined on the key (the slot row's primary key) as well as its holder: on `holder` alone,
    /// which has no index, PostgreSQL's plan could scan every key for each queued run (79 ms a
    /// tick in a bench run, the run phase's server CPU).
    private func ready(excluding held: [Int64], count: Int, on db: PGConnection) throws -> [Int64] {
        try db.query("""
            SELECT r.id FROM runs r JOIN keys k ON k.key = r.key AND k.holder = r.id
            WHERE r.incarnation = $1 AND r.id <> ALL ($3::bigint[]) AND \(StartColumns.filter)
            ORDER BY r.lock_wait NULLS LAST, r.id LIMIT $2::bigint
            """, [host.incarnation, String(count), "{" + held.map(String.init).joined(separator: ",") + "}"]).rows
            .compactMap { $0[0].flatMap { Int64($0) } }
    }

    /// The look's starts, on the pool, with `slots` start slots granted on the loop; `claimed`
    /// gathers the runs claimed (committed), for the loop to hand to the conductor, even when a
    /// later step throws. A run that comes into a lock's line leaves room for the next.
    func startWaiting(_ first: [Int64], held: [Int64], slots: Int, claimed: inout [Claimed], on db: PGConnection) throws {
        var (ready, held) = (first, held)
        while true {
            let started = try start(ready, slots: slots - claimed.count, claimed: &claimed, on: db)
            if started.values.contains(.noSlot) { return }
            let lined = ready.filter { started[$0] == .waits }
            held += lined
            guard !lined.isEmpty, slots > claimed.count else { return }
            ready = try self.ready(excluding: held, count: slots - claimed.count, on: db)
        }
    }

    /// Stops starting runs (shutdown); runs already started go on until the conductor stops them.
    public func stopStarting() {
        reactor.onLoop { [self] in send(.stopStarting) }
    }
}
