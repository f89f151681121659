import BatonCore
import Foundation

/// This host's lease and the fleet's reaper. A thread renews the lease with the database's
/// `now()` every fifth of it, then reaps hosts whose lease ran out (under a transaction-scoped
/// advisory lock, so one host does it at a time). Another thread watches the time since the
/// start of the last successful renewal: past `fenceAfter` (well before the lease can run out
/// as the database counts it) it fences this host: kills every process group it runs and
/// calls `onFenced`, so that no key has a run here while another host takes it over.
public final class FleetLease: @unchecked Sendable {
    let coordinator: FleetCoordinator
    private let lastRenewal = Locked(ContinuousClock.now)
    private let stopped = Locked(false)
    private let fenced = Locked(false)
    private let onFenced: @Sendable (String) -> Void
    /// How long without a renewal before this host fences itself.
    public let fenceAfter: Duration

    public init(_ coordinator: FleetCoordinator, onFenced: @escaping @Sendable (String) -> Void) {
        self.coordinator = coordinator
        self.onFenced = onFenced
        let lease = coordinator.host.lease
        fenceAfter = lease - max(lease / 4, .milliseconds(300))
    }

    var host: FleetHost { coordinator.host }

    /// Records this incarnation (before anything else it writes).
    public func register(on db: PGConnection) throws {
        try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms) VALUES ($1, $2, $3, $4)",
                     [host.incarnation, host.name, String(getpid()), String(Int(host.lease / .milliseconds(1)))])
        lastRenewal.withLock { $0 = .now }
    }

    /// The previous starts of this host name that left runs or a live lease: their runs' processes
    /// are killed first (by the tag every attempt carries), then their runs taken over.
    public func recoverOwnHost(instance: String, on db: PGConnection) throws -> (runs: [Int64], killed: Int, requeued: Int) {
        let previous = try db.query("""
            SELECT DISTINCT incarnation FROM runs WHERE host = $1 AND incarnation <> $2 AND phase IN ('queued', 'loading', 'retrying')
            UNION SELECT incarnation FROM hosts WHERE name = $1 AND incarnation <> $2 AND gone_at IS NULL
            """, [host.name, host.incarnation]).rows.compactMap { $0[0] }
        let unfinished = try db.query("""
            SELECT id FROM runs WHERE host = $1 AND incarnation <> $2 AND phase IN ('queued', 'loading', 'retrying')
            """, [host.name, host.incarnation]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        let killed = TaggedProcesses.kill(instance: instance, runs: Set(unfinished))
        var requeued = 0
        for dead in previous {
            let summary = try db.transaction {
                try db.query("SELECT pg_advisory_xact_lock($1)", [String(FleetSchema.Lock.write.rawValue)])
                return try FleetTakeover.takeOver(dead, name: host.name, reason: "batond on \(host.name) stopped while the run was in flight",
                                                  by: host, actions: coordinator.conductor.action(named:), on: db)
            }
            requeued += summary.requeued.count + summary.adopted.count
        }
        return (unfinished, killed, requeued)
    }

    public func start() {
        let renewer = Thread { [self] in renewLoop() }
        renewer.name = "baton-fleet-lease"
        renewer.start()
        let watchdog = Thread { [self] in watchLoop() }
        watchdog.name = "baton-fleet-fence"
        watchdog.start()
    }

    /// Stops renewing; a clean stop also gives the lease up, so that nobody waits for it to run out.
    public func stop(clean: Bool) {
        stopped.withLock { $0 = true }
        guard clean else { return }
        _ = try? coordinator.pool.with { db in
            try db.query("UPDATE hosts SET gone_at = now(), gone_reason = 'stopped' WHERE incarnation = $1", [host.incarnation])
        }
    }

    private func renewLoop() {
        var db: PGConnection?
        let period = host.lease / 5
        while !stopped.withLock({ $0 }) && !fenced.withLock({ $0 }) {
            let began = ContinuousClock.now
            do {
                if db == nil || db?.isOK == false { db = try coordinator.pool.dedicated() }
                let renewed = try db!.query("UPDATE hosts SET renewed_at = now() WHERE incarnation = $1 AND gone_at IS NULL",
                                            [host.incarnation]).affected == 1
                guard renewed else { return fence("its lease was taken over by another host") }
                lastRenewal.withLock { $0 = max($0, began) }
                try reap(on: db!)
            } catch {
                db = nil
                coordinator.log("cannot renew the fleet lease: \(error)")
            }
            let rest = period - (ContinuousClock.now - began)
            if rest > .zero { Thread.sleep(forTimeInterval: rest / .seconds(1)) }
        }
    }

    private func watchLoop() {
        while !stopped.withLock({ $0 }) && !fenced.withLock({ $0 }) {
            let silent = ContinuousClock.now - lastRenewal.withLock { $0 }
            if silent > fenceAfter { return fence("no lease renewal for \(DurationText.format(silent))") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Kills every run of this host now, then tells the daemon.
    func fence(_ why: String) {
        guard fenced.withLock({ was in defer { was = true }; return !was }) else { return }
        coordinator.stopStarting()
        let groups = ExecRunner.killAllGroups()
        coordinator.log("fenced: \(why); killed \(groups) process group\(groups == 1 ? "" : "s") so that no other host can overlap them")
        onFenced(why)
    }

    /// Ends the lease of hosts that stopped renewing, one reaper at a time.
    func reap(on db: PGConnection) throws {
        try db.transaction {
            try db.query("SELECT pg_advisory_xact_lock($1)", [String(FleetSchema.Lock.write.rawValue)])
            guard try db.query("SELECT pg_try_advisory_xact_lock($1)", [String(FleetSchema.Lock.reaper.rawValue)]).first?[0] == "t" else { return }
            let expired = try db.query("""
                SELECT incarnation, name FROM hosts
                WHERE gone_at IS NULL AND incarnation <> $1 AND renewed_at + lease_ms * interval '1 millisecond' < now()
                """, [host.incarnation]).rows
            for row in expired {
                guard let dead = row[0], let name = row[1] else { continue }
                let summary = try FleetTakeover.takeOver(dead, name: name, reason: "host \(name) stopped renewing its lease",
                                                         by: host, actions: coordinator.conductor.action(named:), on: db)
                coordinator.log("host \(name) lost its lease: \(summary.ended.count) runs ended host_lost, "
                    + "\(summary.requeued.count) restarted here, \(summary.adopted.count) queued runs taken over")
            }
        }
    }
}
