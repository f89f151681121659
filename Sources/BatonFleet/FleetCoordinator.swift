import BatonCore
import FoundationEssentials

/// Single flight across hosts. Every decision about a key is made in a PostgreSQL transaction
/// that locks the key's slot row (`KeySlot`, the same rules as one machine's `FlightTable`);
/// the database's partial unique index refuses a second loading run of a key whatever a host
/// believes. A run belongs to the host that created it (or took it over); only that host's
/// conductor runs it and writes its phases, guarded by owner. Other hosts ask it to stop a run
/// by marking the row, and learn what happens from the feed (`FleetFeed`).
///
/// PostgreSQL work is answered in completions on the threads of the connections that did it;
/// no lock is held while a round trip is in flight. Triggers' transactions go to one connection
/// of their own, one at a time in the order they came (each locks its key's slot row; those of
/// different keys, on this host and others, do not wait for each other); reads and cancels go
/// to the pool. A transaction that may start a run reserves a start slot, so that this host never starts more than `limit` however many
/// transactions are in flight.
public final class FleetCoordinator: RunDispatcher, Sendable {
    public let host: FleetHost
    let pool: PGPool
    /// The connection triggers' transactions run on.
    let decisions: PGWorker
    let conductor: Conductor
    let followers = RemoteFollowers()
    /// Followers of other hosts' runs' output.
    let remoteOutput: RemoteOutput
    /// Runs this host's conductor runs, with the seq of the transition that started them.
    let adopted = Locked<[Int64: Int]>([:])
    /// Every host's runs in flight, as the feed last read them.
    let fleetInFlight = Locked<[Int64: RunSnapshot]>([:])
    /// The most runs this host runs at once.
    let limit: Int
    let log: @Sendable (String) -> Void
    let accepting = Locked(true)
    /// Start slots reserved by transactions that may start a run: held until the conductor has
    /// the run, or given back when the transaction started none.
    let reserved = Locked(0)
    /// This host's debounced runs that a reactor timer will wake it for, one timer per run at
    /// most (`armDebounce`); a timer that fires after a stop finds nothing to start.
    let debounceTimers = Locked<Set<Int64>>([])

    public init(host: FleetHost, pool: PGPool, conductor: Conductor, limit: Int, log: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.pool = pool
        decisions = pool.dedicated(name: "baton-fleet-trig")
        remoteOutput = RemoteOutput(pool: pool)
        self.conductor = conductor
        self.limit = max(limit, 1)
        self.log = log
    }

    // MARK: RunDispatcher

    public func snapshot(of id: Int64) -> RunSnapshot? {
        conductor.snapshot(of: id) ?? fleetInFlight.withLock { $0[id] }
    }

    public func inFlight() -> [RunSnapshot] {
        var runs = fleetInFlight.withLock { $0 }
        for run in conductor.inFlight() { runs[run.id] = withHost(run) }
        return runs.values.filter { !$0.phase.isTerminal }.sorted { $0.id < $1.id }
    }

    public func attach(_ id: Int64, follower: @escaping Conductor.Follower, answered: @escaping @Sendable (RunSnapshot?) -> Void) {
        if adopted.withLock({ $0[id] != nil }), conductor.snapshot(of: id) != nil {
            return conductor.attach(id, follower: follower) { [self] run in answered(run.map(withHost)) }
        }
        pool.submit({ [self] db in try read(id, on: db) }) { [self] result in
            guard case let .success(found?) = result, !found.0.phase.isTerminal else { return answered(nil) }
            answered(found.0)
            follow(found.0, seq: found.1, follower)
        }
    }

    /// Follows a run through the feed, then reads what it may have missed before it was registered.
    func follow(_ run: RunSnapshot, seq: Int, _ follower: @escaping Conductor.Follower) {
        followers.add(run, seq: seq, follower)
        catchUp(run.id, after: seq)
    }

    func catchUp(_ id: Int64, after seq: Int) {
        pool.submit({ [self] db in try transitions(of: id, after: seq, on: db) }) { [self] result in
            guard case let .success(updates) = result else { return }
            for update in updates { followers.deliver(update) }
        }
    }

    // MARK: Rows

    /// The run and the seq of its last transition.
    func read(_ id: Int64, on db: PGConnection) throws -> (RunSnapshot, Int)? {
        guard let row = try db.query("SELECT \(FleetRows.runColumns), last_seq FROM runs WHERE id = $1", [String(id)]).first else { return nil }
        return (FleetRows.run(row), Int(row[FleetRows.runColumnCount] ?? "") ?? 1)
    }

    /// The run's transitions after `seq`, each with the run as it was after it (replayed from its first).
    func transitions(of id: Int64, after seq: Int, on db: PGConnection) throws -> [RunUpdate] {
        guard let (run, last) = try read(id, on: db), last > seq else { return [] }
        var state = RunSnapshot(id: run.id, action: run.action, key: run.key, phase: .queued, policy: run.policy, params: run.params,
                                trigger: run.trigger, queuedAt: run.queuedAt)
        state.host = run.host
        var updates: [RunUpdate] = []
        for row in try db.query("SELECT seq, from_phase, to_phase, at, detail FROM transitions WHERE run_id = $1 ORDER BY seq",
                                [String(id)]).rows {
            let transition = FleetRows.transition(runID: id, row, from: 0)
            state = state.applying(transition)
            if transition.seq > seq { updates.append(RunUpdate(run: state, transition: transition)) }
        }
        return updates
    }

    func withHost(_ run: RunSnapshot) -> RunSnapshot {
        var run = run
        if run.host == nil { run.host = host.name }
        return run
    }

    // MARK: Starting

    /// A run this host claimed (its `loading` written), for the conductor to run.
    struct Claimed {
        var run: RunSnapshot
        var seq: Int
        var action: Action
        /// What a hook run is told of the run that fired it (`FleetHooks.context`).
        var hook: HookContext?
    }

    /// Takes a start slot if this host accepts and its runs loading or retrying plus the slots
    /// already reserved stay under the limit. Give it back (`release`) unless a run was handed over.
    func reserveStart() -> Bool {
        guard accepting.withLock({ $0 }) else { return false }
        let running = conductor.runningCount
        return reserved.withLock { reserved in
            guard running + reserved < limit else { return false }
            reserved += 1
            return true
        }
    }

    /// Gives a start slot back.
    func releaseStart() {
        reserved.withLock { $0 -= 1 }
    }

    /// In the caller's transaction (which holds the key's slot row, and has checked
    /// that the run holds a free key): writes `loading` for a queued run of this host. A run whose
    /// action this host no longer has is cancelled instead (it would hold its key forever).
    func claim(_ run: RunSnapshot, seq: Int, on db: PGConnection) throws -> Claimed? {
        guard let action = conductor.action(named: run.action) else {
            let detail = TransitionDetail(reason: "removed", error: "action \(run.action) is no longer configured on \(host.name)")
            _ = try FleetJournal.apply(Transition(runID: run.id, seq: seq + 1, from: .queued, to: .cancelled, at: .now, detail: detail),
                                       on: db, as: host)
            return nil
        }
        let transition = Transition(runID: run.id, seq: seq + 1, from: .queued, to: .loading, at: .now, detail: TransitionDetail(attempt: 1))
        guard try FleetJournal.apply(transition, on: db, as: host) else { return nil }
        return Claimed(run: run.applying(transition), seq: seq + 1, action: action, hook: try FleetHooks.context(of: run, on: db))
    }

    /// Hands a claimed run (its claim committed) to the conductor; its start slot is given back
    /// once the conductor counts it.
    func hand(_ claimed: Claimed, follower: Conductor.Follower?) {
        adopted.withLock { $0[claimed.run.id] = claimed.seq }
        conductor.adopt(AdoptedRun(run: claimed.run, seq: claimed.seq, action: claimed.action, hook: claimed.hook), follower: follower) { [self] _ in
            releaseStart()
        }
    }

    /// Starts a queued run of this host that holds a free key, if a start slot is free: its
    /// `loading` is written in the transaction that checks all of that. A unique violation
    /// (another run of the key is loading, whatever this host believed) means "not yet": the
    /// run stays queued until the key is free.
    func start(_ id: Int64, on db: PGConnection) throws -> Bool {
        guard reserveStart() else { return false }
        do {
            guard let claimed = try claim(id, on: db) else {
                releaseStart()
                return false
            }
            hand(claimed, follower: nil)
            return true
        } catch let error as PGError where error.isUniqueViolation {
            releaseStart()
            log("run \(id) could not start yet: \(error.message)")
            return false
        } catch {
            releaseStart()
            throw error
        }
    }

    private func claim(_ id: Int64, on db: PGConnection) throws -> Claimed? {
        // The key's slot row is locked before the run is read again and its `loading` written.
        try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ in
            guard let (run, seq) = try read(id, on: db), run.phase == .queued,
                  let slotRow = try db.query("SELECT holder, follow_up, draining FROM keys WHERE key = $1", [run.key]).first,
                  KeySlot(row: slotRow).startable == id,
                  // Its window, if it debounces, has passed by the database's clock, read now that the row is held.
                  try db.query("SELECT 1 FROM runs r WHERE r.id = $1 AND r.incarnation = $2 AND \(FleetDebounce.due)",
                               [String(id), host.incarnation]).first != nil
            else { return nil }
            let claimed = try claim(run, seq: seq, on: db)
            try db.execute("NOTIFY baton")
            return claimed
        }
    }

    /// Starts every run of this host that holds a free key, oldest first, while slots are free.
    /// Joined on the key (the slot row's primary key) as well as its holder: on `holder` alone,
    /// which has no index, PostgreSQL's plan could scan every key for each queued run (79 ms a
    /// tick in a bench run, the run phase's server CPU).
    /// A debounced run is ready once its window has passed; one still in its window gets a timer.
    func startWaiting(on db: PGConnection) throws {
        if conductor.configuredActions().contains(where: { $0.debounce != nil }) { try armDebounce(on: db) }
        let room = limit - conductor.runningCount - reserved.withLock { $0 }
        guard room > 0, accepting.withLock({ $0 }) else { return }
        let ready = try db.query("""
            SELECT r.id FROM runs r JOIN keys k ON k.key = r.key AND k.holder = r.id
            WHERE r.incarnation = $1 AND r.phase = 'queued' AND cardinality(k.draining) = 0 AND \(FleetDebounce.due)
            ORDER BY r.id LIMIT $2::bigint
            """, [host.incarnation, String(room)]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        for id in ready { _ = try start(id, on: db) }
    }

    /// Stops starting runs (shutdown); runs already started go on until the conductor stops them.
    public func stopStarting() {
        accepting.withLock { $0 = false }
    }
}
