import BatonCore
import FoundationEssentials

/// Single flight across hosts. Every decision about a key is made in a PostgreSQL transaction
/// that locks the key's slot row, by the engine's rules (`KeyDecision`, as one machine's `FlightTable`);
/// the database's partial unique index refuses a second loading run of a key whatever a host
/// believes. A run belongs to the host that created it (or took it over); only that host's
/// conductor runs it and writes its phases, guarded by owner. Other hosts ask it to stop a run
/// by marking the row, and learn what happens from the feed (`FleetFeed`).
///
/// PostgreSQL work is answered in completions on the threads of the connections that did it;
/// no lock is held while a round trip is in flight. Triggers go to one connection of their own
/// (`TriggerQueue`), which decides every trigger waiting in one transaction, in the order they
/// came (it locks their keys' slot rows in key order; transactions of different keys, on this
/// host and others, do not wait for each other); reads and cancels go to the pool. What the
/// coordinator decides itself is one value on the loop (`CoordinatorState`): a transaction that
/// may start a run is granted its start slots there before it is submitted, so that this host
/// never starts more than `limit` however many transactions are in flight, and its completion
/// comes back to the loop, which hands its runs to the conductor and takes the other slots back.
public final class FleetCoordinator: RunDispatcher, Sendable {
    public let host: FleetHost
    let pool: PGPool
    /// The triggers waiting for their batch's transaction, on a connection of their own.
    let decisions: TriggerQueue
    let conductor: Conductor
    let followers: RemoteFollowers
    /// What the feed delivered, from this host's commits and from catch-ups (`/metrics`).
    public let feedCounts = FleetFeedCounts()
    /// Followers of other hosts' runs' output.
    let remoteOutput: RemoteOutput
    /// The most runs this host runs at once.
    let limit: Int
    let log: @Sendable (String) -> Void
    /// The loop every decision of this coordinator is made on.
    let reactor: Reactor
    /// Start slots, adopted runs, debounce timers, whether it starts runs, the fleet's runs in
    /// flight: one value (`CoordinatorState`), changed only on the loop, each event decided under
    /// its lock (a pure step) and the effects performed after. Other threads (a `status`, a `show`
    /// or a follow asked from a task) read it in place under that lock: a copy published after
    /// each event cost the loop a copy of every run in flight at its next change (issue 38's fleet
    /// figures: three hosts' runs/s fell 12-23% with one), as the conductor's did.
    let state: Locked<CoordinatorState>
    /// The retrying runs moved here that last waited for a free slot, as last logged (`resumeMoved`):
    /// each renewal that finds the same ones waiting says nothing more.
    let waitingForSlot: LoopOwned<[Int64]>
    /// Whether another host listens: the busiest commits notify only then (`FleetCompany`).
    public let company: FleetCompany

    /// `company`: the one this host's store writes with (`FleetStore`), if any.
    public init(host: FleetHost, pool: PGPool, conductor: Conductor, limit: Int, reactor: Reactor, company: FleetCompany? = nil,
                log: @escaping @Sendable (String) -> Void) {
        self.host = host
        self.company = company ?? FleetCompany(host)
        self.pool = pool
        self.reactor = reactor
        decisions = TriggerQueue(conninfo: pool.conninfo, defaults: pool.defaults)
        remoteOutput = RemoteOutput(pool: pool, reactor: reactor)
        followers = RemoteFollowers(reactor: reactor)
        self.conductor = conductor
        self.limit = max(limit, 1)
        self.log = log
        state = Locked(CoordinatorState(limit: limit))
        waitingForSlot = LoopOwned([], on: reactor)
    }


    /// Handles `event` on the loop and performs its effects, with no lock held.
    @discardableResult
    func send(_ event: CoordinatorState.Event, followers: [Int64: Conductor.Follower] = [:]) -> [CoordinatorState.Effect] {
        reactor.assertOnLoop("the fleet coordinator's state")
        let effects = state.withLock { $0.handle(event) }
        for effect in effects { perform(effect, followers: followers) }
        return effects
    }

    /// Whether this host's conductor runs `id` (from any thread).
    func runsHere(_ id: Int64) -> Bool {
        state.withLock { $0.adopted[id] != nil } && conductor.snapshot(of: id) != nil
    }

    // MARK: RunDispatcher

    public func snapshot(of id: Int64) -> RunSnapshot? {
        conductor.snapshot(of: id) ?? state.withLock { $0.fleetInFlight[id] }
    }

    public func inFlight() -> [RunSnapshot] {
        var runs = state.withLock { $0.fleetInFlight }
        for run in conductor.inFlight() { runs[run.id] = withHost(run) }
        return runs.values.filter { !$0.phase.isTerminal }.sorted { $0.id < $1.id }
    }

    /// The fleet's pauses, read and handed to the conductor (before `then`, on its loop).
    public func readPauses(then: @escaping @Sendable (BatonError?) -> Void) {
        pool.submit({ db in (Timestamp.now, try FleetPauses.read(on: db)) }) { [self] result in
            switch result {
            case let .success((readAt, pauses)):
                conductor.seen(pauses: pauses, readAt: readAt)
                then(nil)
            case let .failure(error):
                then(.storeUnavailable("the fleet's pauses could not be read: \(error)"))
            }
        }
    }

    public func attach(_ id: Int64, follower: @escaping Conductor.Follower, answered: @escaping @Sendable (RunSnapshot?) -> Void) {
        if runsHere(id) {
            return conductor.attach(id, follower: follower) { [self] run in answered(run.map(withHost)) }
        }
        reactor.onLoop { [self] in
            // A run in flight that the feed delivered or refreshed is followed from the loop's copy,
            // with no read, while the feed keeps up (`CoordinatorState.followable`).
            if case let (known, seq)? = state.withLock({ $0.followable(id, at: reactor.clock.now) }) {
                answered(known)
                followers.add(known, seq: seq, follower)
                return
            }
            pool.submit({ [self] db in try read(id, on: db) }) { [self] result in
                guard case let .success(found?) = result, !found.0.phase.isTerminal else { return answered(nil) }
                answered(found.0)
                follow(found.0, seq: found.1, follower)
            }
        }
    }

    /// Follows a run through the feed, then reads what it may have missed before it was registered
    /// (unless the loop's table says nothing after `seq` was delivered yet: `CoordinatorState.readsBack`).
    func follow(_ run: RunSnapshot, seq: Int, _ follower: @escaping Conductor.Follower) {
        reactor.onLoop { [self] in
            let back = state.withLock { $0.readsBack(run.id, after: seq, at: reactor.clock.now) }
            guard let id = followers.add(run, seq: seq, catchingUp: back, follower), back else { return }
            catchUp(run.id, after: seq, for: id)
        }
    }

    /// Reads the run's transitions after `seq` and tells them to follower `id` alone: the others
    /// may still wait for older ones from the feed, which a newer one would make them drop. A
    /// read that fails is answered with none: what the feed brought meanwhile is told then.
    func catchUp(_ run: Int64, after seq: Int, for id: Int) {
        pool.submit({ [self] db in try transitions(of: run, after: seq, on: db) }) { [self] result in
            let updates = (try? result.get()) ?? []
            reactor.onLoop { [self] in followers.caughtUp(run, updates, for: id) }
        }
    }

    // MARK: Rows

    /// The run and the seq of its last transition.
    func read(_ id: Int64, on db: PGConnection) throws -> (RunSnapshot, Int)? {
        guard let row = try db.query("SELECT \(FleetRows.withSeq.sql) FROM runs WHERE id = $1", [String(id)]).first else { return nil }
        return FleetRows.runAndSeq(row)
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
