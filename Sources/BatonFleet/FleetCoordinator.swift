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
    /// writes `loading` for a queued run of this host, with the locks it took. A run whose
    /// action this host no longer has is cancelled instead (it would hold its key forever).
    func claim(_ run: RunSnapshot, seq: Int, on db: PGConnection) throws -> Attempt {
        guard let action = conductor.action(named: run.action) else {
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

    /// Hands a claimed run (its claim committed) to the conductor; its start slot is given back
    /// once the conductor counts it.
    func hand(_ claimed: Claimed, follower: Conductor.Follower?) {
        adopted.withLock { $0[claimed.run.id] = claimed.seq }
        conductor.adopt(AdoptedRun(run: claimed.run, seq: claimed.seq, action: claimed.action, hook: claimed.hook), follower: follower) { [self] _ in
            releaseStart()
        }
    }

    /// How a start went.
    enum Started {
        case started
        /// No start slot is free on this host.
        case noSlot
        /// It waits for a lock, in line.
        case waits
        /// Not startable (any more), or not yet.
        case not
    }

    /// Starts a queued run of this host that holds a free key, if a start slot is free: its
    /// `loading` is written in the transaction that checks all of that, and takes its locks. A
    /// unique violation (another run of the key is loading, whatever this host believed) means
    /// "not yet": the run stays queued until the key is free.
    func start(_ id: Int64, on db: PGConnection) throws -> Started {
        guard reserveStart() else { return .noSlot }
        do {
            switch try claim(id, on: db) {
            case let .claimed(claimed):
                hand(claimed, follower: nil)
                return .started
            case .waits:
                releaseStart()
                return .waits
            case .none:
                releaseStart()
                return .not
            }
        } catch let error as PGError where error.isUniqueViolation {
            releaseStart()
            log("run \(id) could not start yet: \(error.message)")
            return .not
        } catch {
            releaseStart()
            throw error
        }
    }

    private func claim(_ id: Int64, on db: PGConnection) throws -> Attempt {
        // The key's slot row is locked before the run is read again and its `loading` written.
        try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ in
            guard let (run, seq) = try read(id, on: db), run.phase == .queued,
                  let slotRow = try db.query("SELECT holder, follow_up, draining FROM keys WHERE key = $1", [run.key]).first,
                  KeySlot(row: slotRow).startable == id,
                  try db.query("SELECT 1 FROM runs WHERE id = $1 AND incarnation = $2", [String(id), host.incarnation]).first != nil
            else { return .none }
            let attempt = try claim(run, seq: seq, on: db)
            if attempt.claimed != nil { try db.execute("NOTIFY baton") }
            return attempt
        }
    }

    /// Starts every run of this host that holds a free key, the runs in a lock's line first
    /// (in its order), then by id, while slots are free. A run in line that the line holds back
    /// (read first, `FleetLocks.waits`) is not tried: its transaction would only find it so
    /// again; one that comes into line while it is tried leaves room for the next. Joined on
    /// the key (the slot row's primary key) as well as its holder: on `holder` alone, which has
    /// no index, PostgreSQL's plan could scan every key for each queued run (79 ms a tick in a
    /// bench run, the run phase's server CPU).
    func startWaiting(on db: PGConnection) throws {
        let limits = lockLimits()
        var held = limits.isEmpty ? [] : Array(FleetLocks.waits(FleetLocks.rows(try db.query(FleetLocks.live(overlapping: nil)).rows),
                                                                limits: limits).keys)
        while true {
            let room = limit - conductor.runningCount - reserved.withLock { $0 }
            guard room > 0, accepting.withLock({ $0 }) else { return }
            let ready = try db.query("""
                SELECT r.id FROM runs r JOIN keys k ON k.key = r.key AND k.holder = r.id
                WHERE r.incarnation = $1 AND r.phase = 'queued' AND cardinality(k.draining) = 0 AND r.id <> ALL ($3::bigint[])
                ORDER BY r.lock_wait NULLS LAST, r.id LIMIT $2::bigint
                """, [host.incarnation, String(room), "{" + held.map(String.init).joined(separator: ",") + "}"]).rows
                .compactMap { $0[0].flatMap { Int64($0) } }
            var lined = false
            for id in ready {
                switch try start(id, on: db) {
                case .started, .not: continue
                case .noSlot: return
                case .waits:
                    held.append(id)
                    lined = true
                }
            }
            guard lined else { return }
        }
    }

    /// Stops starting runs (shutdown); runs already started go on until the conductor stops them.
    public func stopStarting() {
        accepting.withLock { $0 = false }
    }
}
