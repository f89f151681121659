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
/// no lock is held while a round trip is in flight. Triggers go to one connection of their own
/// (`TriggerQueue`), which decides every trigger waiting in one transaction, in the order they
/// came (it locks their keys' slot rows in key order; transactions of different keys, on this
/// host and others, do not wait for each other); reads and cancels go to the pool. A transaction that may start a run reserves a start slot, so that this host never starts more than `limit` however many
/// transactions are in flight.
public final class FleetCoordinator: RunDispatcher, Sendable {
    public let host: FleetHost
    let pool: PGPool
    /// The triggers waiting for their batch's transaction, on a connection of their own.
    let decisions: TriggerQueue
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
        decisions = TriggerQueue(conninfo: pool.conninfo, defaults: pool.defaults)
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
}
