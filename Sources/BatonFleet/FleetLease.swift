import BatonCore
import FoundationEssentials
import Glibc

/// This host's lease and the fleet's reaper. A connection of its own (a `PGWorker`) renews the
/// lease with the database's `now()` every fifth of it, on a reactor timer; after each renewal a
/// second one (the reaper's) reaps hosts whose lease ran out (under a transaction-scoped advisory
/// lock, so one host does it at a time; the slot rows of the dead hosts' runs' keys locked in key
/// order first), then reads the retrying runs a reap moved here that the conductor does not hold
/// yet, for it to resume (`FleetCoordinator.resumeMoved`). Apart, so that a long reap (a dead
/// host's many runs, a loaded server) never holds the next renewal back: on one connection the
/// reaping host's fence counted on through the reap, and a survivor fenced itself while taking
/// over (flake33). A second reactor timer, armed from the start of the last successful renewal, fires
/// `fenceAfter` later (well before the lease can run out as the database counts it) unless a
/// renewal came first: then it fences this host, killing every process group it runs and
/// calling `onFenced`, so that no key has a run here while another host takes it over; the
/// fence's time also goes to `onArmed` (the guard of the runs, which kills them then if batond,
/// frozen, could not). No thread waits for either timer.
public final class FleetLease: Sendable {
    private struct State {
        var lastRenewal = ContinuousClock.now
        var renewal: Reactor.TimerID?
        var fence: Reactor.TimerID?
        var stopped = false
        var fenced = false
        /// Retrying runs moved here are being handed to the conductor (`FleetCoordinator.resumeMoved`): one hand-over at a time.
        var resuming = false
        /// A reap is under way on the reaper's connection: one at a time.
        var reaping = false
    }

    let coordinator: FleetCoordinator
    private let connection: PGWorker
    /// The reaper's connection: reaps and the hand of moved retrying runs, off the renewals' one.
    private let reaper: PGWorker
    private let state = Locked(State())
    private let onFenced: @Sendable (String) -> Void
    /// Told on the reactor, each time the fence is armed, the time it is armed for: the guard of
    /// this host's runs kills them then unless told a later one (batond may be frozen by then).
    private let onArmed: @Sendable (ContinuousClock.Instant) -> Void
    /// Told (on the lease's thread) when a clean stop gave the lease up: the guard need not wait for its deadline.
    private let onReleased: @Sendable () -> Void
    /// How long without a renewal before this host fences itself.
    public let fenceAfter: Duration

    public init(_ coordinator: FleetCoordinator, onFenced: @escaping @Sendable (String) -> Void,
                onArmed: @escaping @Sendable (ContinuousClock.Instant) -> Void = { _ in }, onReleased: @escaping @Sendable () -> Void = {}) {
        self.coordinator = coordinator
        self.onFenced = onFenced
        self.onArmed = onArmed
        self.onReleased = onReleased
        let lease = coordinator.host.lease
        fenceAfter = lease - max(lease / 4, .milliseconds(300))
        // Its thread lives while a renewal runs (they are a fifth of the lease apart); the connection stays open.
        connection = coordinator.pool.dedicated(name: "baton-lease", idleTimeout: .zero)
        reaper = coordinator.pool.dedicated(name: "baton-reaper", idleTimeout: .zero)
    }

    var host: FleetHost { coordinator.host }

    /// Records this incarnation and the tag its processes carry (before anything else it writes).
    /// A join tried again after an error registers again: the row is this start's already.
    public func register(instance: String, on db: PGConnection) throws {
        try Self.register(host, instance: instance, on: db)
        state.withLock { $0.lastRenewal = .now }
    }

    static func register(_ host: FleetHost, instance: String, on db: PGConnection) throws {
        try db.query("""
            INSERT INTO hosts (incarnation, name, pid, lease_ms, instance) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (incarnation) DO UPDATE SET renewed_at = now() WHERE hosts.gone_at IS NULL
            """, [host.incarnation, host.name, String(getpid()), String(Int(host.lease / .milliseconds(1))), instance])
    }

    /// What a start of this host found its previous starts had left.
    public struct Recovered: Sendable {
        /// Their unfinished runs, when this start began.
        public var runs: [Int64] = []
        public var killed = 0
        public var requeued = 0
        /// Their loading runs taken back within their lease, for the conductor to adopt by their shims
        /// (`FleetTakeBack`). Their retrying runs moved here (`FleetTakeover`) are not among them: the
        /// sweep after each renewal resumes them within the start slots (`FleetCoordinator.resumeMoved`).
        public var adopted: [UnfinishedRun] = []
        /// The tags their processes carry (this start's among them): what ends their guards.
        public var instances: Set<String> = []
    }

    /// The previous starts of this host name that left runs or a live lease. Where one's lease
    /// still holds (to the guard's deadline) and it carried this start's tag, its loading runs that
    /// `adoptable` says a shim keeps are taken back (moved to this incarnation, for the conductor to
    /// adopt); every other process of this host's runs is killed (by the tag each previous start
    /// recorded, and this start's: a run another host took over included), then the rest of
    /// their runs taken over (a retrying run one machine's restart would resume is moved here, for
    /// the conductor to wait out its backoff once the sweep hands it over within the slots: `FleetTakeover`,
    /// `FleetCoordinator.resumeMoved`). A join tried again finds the runs an earlier try took back already
    /// this incarnation's: they are taken back still, never killed.
    /// `killCgroups` kills what the attempts' cgroups hold but the spared runs' (with the tag
    /// kill, before any run ends), in this start's subtree and those of the other tags given.
    public func recoverOwnHost(instance: String, adoptable: (UnfinishedRun) -> Bool = { _ in false },
                               killCgroups: ([UnfinishedRun], Set<String>) -> Int = { _, _ in 0 }, on db: PGConnection) throws -> Recovered {
        let previous = try db.query("""
            SELECT DISTINCT incarnation FROM runs WHERE host = $1 AND incarnation <> $2 AND phase IN ('queued', 'loading', 'retrying')
            UNION SELECT incarnation FROM hosts WHERE name = $1 AND incarnation <> $2 AND gone_at IS NULL
            """, [host.name, host.incarnation]).rows.compactMap { $0[0] }
        var recovered = Recovered()
        recovered.runs = try db.query("""
            SELECT id FROM runs WHERE host = $1 AND incarnation <> $2 AND phase IN ('queued', 'loading', 'retrying')
            """, [host.name, host.incarnation]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        let tags = try FleetTakeBack.instances(of: previous, assuming: instance, on: db)
        recovered.instances = Set(tags.values).union([instance])
        // Taken back by an earlier try of this join (committed before its error).
        let mine = try FleetTakeBack.loadingRuns(of: host.incarnation, on: db)
        // The runs a shim keeps, of the starts whose lease holds and whose processes carry this
        // start's tag: spared by the kill, which comes before any run is ended (a key set free has no process left).
        var candidates: [String: [UnfinishedRun]] = [:]
        for dead in previous where tags[dead] == instance {
            guard try FleetTakeBack.leaseHolds(dead, on: db) else { continue }
            candidates[dead] = try FleetTakeBack.loadingRuns(of: dead, on: db).filter(adoptable)
        }
        let spared = Set((Array(candidates.values.joined()) + mine).map(\.run.id))
        recovered.killed = killCgroups(Array(candidates.values.joined()) + mine, recovered.instances.subtracting([instance]))
            + recovered.instances.sorted().reduce(0) { $0 + TaggedProcesses.killUntilGone(instance: $1, runs: nil, except: spared) }
        // Retrying runs moved here (`FleetTakeover`'s `resumed`, by this try or an earlier one) are not
        // adopted here: the sweep after each renewal (`resumeMoved`, first at `start`) resumes them within
        // the start slots, once the conductor counts the loading runs taken back.
        recovered.adopted = mine
        for dead in previous {
            let actions = coordinator.conductor.configuredActions()
            let locks = try FleetTakeover.locks([dead], actions: actions, on: db)
            // The reaper's lock first: no reaper counts the lease out between the look and the move.
            recovered.adopted += try db.transaction(opening: [FleetTakeBack.reaperLock] + locks) { _ in
                var adopted: [UnfinishedRun] = []
                if let runs = candidates[dead], try FleetTakeBack.leaseHolds(dead, on: db) {
                    let moved = try FleetTakeBack.move(runs.map(\.run.id), from: dead, to: host, on: db)
                    adopted = runs.filter { moved.contains($0.run.id) }
                }
                let summary = try FleetTakeover.takeOver(dead, name: host.name, reason: "batond on \(host.name) stopped while the run was in flight",
                                                         by: host, definitions: { try coordinator.definitions(of: $0, on: db) }, on: db)
                recovered.requeued += summary.requeued.count + summary.adopted.count
                // Retrying runs moved here (`summary.resumed`) are the sweep's, as above.
                return adopted
            }
        }
        // A spared run that another host took over first (its lease ran out meanwhile) is stopped now.
        let lost = spared.subtracting(recovered.adopted.map(\.run.id))
        if !lost.isEmpty { recovered.killed += TaggedProcesses.killUntilGone(instance: instance, runs: lost) }
        return recovered
    }

    /// Starts renewing now, and arms the fence from the last renewal (`register`'s).
    public func start() {
        armFence()
        renew()
    }

    /// Stops renewing; a clean stop also gives the lease up, so that nobody waits for it to run out,
    /// unless it left runs loading to their shims: the lease holds them until it runs out, for
    /// this host's next start to take back (or for the reaper, after it, to end).
    public func stop(clean: Bool) {
        let timers = state.withLock { state in
            state.stopped = true
            return [state.renewal, state.fence].compactMap { $0 }
        }
        for timer in timers { coordinator.reactor.cancel(timer) }
        if clean {
            connection.submit({ [host] db in
                try db.query("""
                    UPDATE hosts SET gone_at = now(), gone_reason = 'stopped' WHERE incarnation = $1
                    AND NOT EXISTS (SELECT 1 FROM runs WHERE incarnation = $1 AND phase = 'loading')
                    """, [host.incarnation]).affected == 1
            }) { [onReleased] given in
                if case .success(true) = given { onReleased() }
            }
        }
        connection.close(timeout: .seconds(5))
        reaper.close(timeout: .seconds(5))
    }

    /// One renewal on the lease's connection (then a reap aside); the next is armed from its start.
    private func renew() {
        guard !state.withLock({ $0.stopped || $0.fenced }) else { return }
        let began = ContinuousClock.now
        connection.submit({ [self, host] db -> Bool in
            // With whether another host is not gone (an expired one not yet reaped counts): this
            // host's busiest commits notify only then (`FleetCompany`).
            let others = try db.query("""
                UPDATE hosts SET renewed_at = now() WHERE incarnation = $1 AND gone_at IS NULL
                RETURNING EXISTS (SELECT 1 FROM hosts o WHERE o.incarnation <> $1 AND o.gone_at IS NULL)
                """, [host.incarnation]).rows
            guard let found = others.first else { return false }
            coordinator.company.renewed(others: found[0] != "f")
            // The fence counts from this renewal.
            state.withLock { $0.lastRenewal = max($0.lastRenewal, began) }
            armFence()
            return true
        }) { [self] result in
            switch result {
            case .success(false): return fence("its lease was taken over by another host")
            case .success(true): reapAside()
            case let .failure(error): coordinator.log("cannot renew the fleet lease: \(error)")
            }
            let timer = coordinator.reactor.after(max(host.lease / 5 - (ContinuousClock.now - began), .zero)) { [self] in renew() }
            state.withLock { $0.renewal = timer }
        }
    }

    /// After a renewal, on the reaper's connection, unless one is under way: the reap, then the
    /// retrying runs moved here (whether the reap failed or not: a commit whose answer was lost),
    /// which reach the conductor from their rows.
    private func reapAside() {
        let begins = state.withLock { state -> Bool in
            guard !state.reaping, !state.stopped, !state.fenced else { return false }
            state.reaping = true
            return true
        }
        guard begins else { return }
        reaper.submit({ [self] db in
            let reaped = Result { try reap(on: db) }
            do { try resumeMoved(on: db) } catch { coordinator.log("the retrying runs of this host could not be read: \(error)") }
            try reaped.get()
        }) { [self] result in
            state.withLock { $0.reaping = false }
            if case let .failure(error) = result { coordinator.log("cannot reap the fleet's gone hosts: \(error)") }
        }
    }

    /// (Re)arms the fence for `fenceAfter` past the last renewal. The timers are set with no
    /// lock held; of two arms at once the later cancels the other's timer, and a stray one
    /// only checks again.
    private func armFence() {
        guard let (old, at) = state.withLock({ state -> (Reactor.TimerID?, ContinuousClock.Instant)? in
            guard !state.stopped && !state.fenced else { return nil }
            defer { state.fence = nil }
            return (state.fence, state.lastRenewal + fenceAfter)
        }) else { return }
        if let old { coordinator.reactor.cancel(old) }
        let timer = coordinator.reactor.after(at - .now) { [self] in checkFence() }
        coordinator.reactor.post { [onArmed] in onArmed(at) }
        let raced = state.withLock { state in
            defer { state.fence = timer }
            return state.fence
        }
        if let raced { coordinator.reactor.cancel(raced) }
    }

    /// On the reactor: fences unless a renewal came meanwhile (then the timer was re-armed, or is about to be).
    private func checkFence() {
        let silent = ContinuousClock.now - state.withLock { $0.lastRenewal }
        guard silent > fenceAfter else { return armFence() }
        fence("no lease renewal for \(DurationText.format(silent))")
    }

    /// Kills every run of this host now, then tells the daemon.
    func fence(_ why: String) {
        let first = state.withLock { state -> Bool in
            guard !state.fenced && !state.stopped else { return false }
            state.fenced = true
            return true
        }
        guard first else { return }
        coordinator.stopStarting()
        let groups = ExecRunner.killAllGroups()
        // A run whose leader has exited while the rest of its tree lives (its leftovers given their
        // grace) has no leader left to name its group, and without a cgroup nothing else holds it:
        // every process tagged with this host's instance goes too, until none is left.
        let tagged = coordinator.conductor.instance.map { TaggedProcesses.killUntilGone(instance: $0, runs: nil) } ?? 0
        coordinator.log("fenced: \(why); killed \(groups) process group\(groups == 1 ? "" : "s") and \(tagged) tagged process\(tagged == 1 ? "" : "es") "
            + "so that no other host can overlap them")
        onFenced(why)
    }

    /// Ends the lease of hosts that stopped renewing, one reaper at a time, and takes over the
    /// runs that hosts which stopped cleanly left queued (a follow-up, a pending debounced run, a
    /// run waiting for a lock or a slot): they are the fleet's, and would otherwise hold their
    /// key until a host of the same name started again.
    func reap(on db: PGConnection) throws {
        try db.transaction {
            guard try db.query("SELECT pg_try_advisory_xact_lock($1)", [String(FleetSchema.Lock.reaper.rawValue)]).first?[0] == "t" else { return }
            let expired = try db.query("""
                SELECT incarnation, name, false FROM hosts
                WHERE gone_at IS NULL AND incarnation <> $1 AND renewed_at + lease_ms * interval '1 millisecond' < now()
                UNION
                SELECT DISTINCT h.incarnation, h.name, true FROM runs r JOIN hosts h ON h.incarnation = r.incarnation
                WHERE r.phase IN ('queued', 'loading', 'retrying') AND h.gone_at IS NOT NULL AND r.incarnation <> $1
                """, [host.incarnation]).rows
            guard !expired.isEmpty else { return }
            // The pause locks of the actions whose failures count, then their runs' keys' slot rows
            // and the hook keys their ends may trigger, all at once in key order, before any of their transitions.
            let actions = coordinator.conductor.configuredActions()
            try db.pipeline(FleetTakeover.locks(expired.compactMap { $0[0] }, actions: actions, on: db))
            for row in expired {
                guard let dead = row[0], let name = row[1] else { continue }
                let stopped = row[2] == "t"
                let summary = try FleetTakeover.takeOver(dead, name: name, reason: stopped ? "host \(name) stopped" : "host \(name) stopped renewing its lease",
                                                         by: host, definitions: { try coordinator.definitions(of: $0, on: db) }, on: db)
                coordinator.log("host \(name) \(stopped ? "stopped and left runs" : "lost its lease"): \(summary.ended.count) runs ended host_lost, "
                    + "\(summary.requeued.count) restarted here, \(summary.adopted.count) queued runs taken over, "
                    + "\(summary.resumed.count) waiting to retry here, \(summary.stopped.count) retrying ended as a stop asked")
            }
        }
    }

    /// Hands this host's retrying runs that its conductor does not hold to it (`FleetCoordinator.resumeMoved`),
    /// unless a hand-over is still going on.
    private func resumeMoved(on db: PGConnection) throws {
        guard !state.withLock({ $0.resuming }) else { return }
        let ids = try coordinator.retryingHere(on: db)
        guard !ids.isEmpty else { return coordinator.reactor.onLoop { [coordinator] in coordinator.noneWaitToResume() } }
        state.withLock { $0.resuming = true }
        coordinator.resumeMoved(ids) { [state] in state.withLock { $0.resuming = false } }
    }
}
