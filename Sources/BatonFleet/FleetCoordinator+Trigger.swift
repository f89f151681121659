import BatonCore
import FoundationEssentials

extension FleetCoordinator {
    /// What a trigger's transaction decided.
    struct Decided: Sendable {
        var decision: FlightTable.Decision
        var run: RunSnapshot
        var seq: Int
        /// The runs it asked to stop that this host runs.
        var stopHere: [Int64] = []
        /// The new run, started in the same transaction (its key and a slot were free).
        var claimed: Claimed?
        /// The lock the new run waits for, when its key was free but a lock it claims was not.
        var waiting: LockWait?
        /// A new debounced run of this host: how long its window is open, by the database's clock.
        var debouncing: Duration? = nil
    }

    /// On the loop (posted there from elsewhere): a trigger is granted a start slot, if one is
    /// free, for the run its batch may start.
    public func trigger(_ trigger: Trigger, follower: Conductor.Follower?,
                        answered: @escaping @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void) {
        guard reactor.isCurrent else { return reactor.post { [self] in self.trigger(trigger, follower: follower, answered: answered) } }
        guard state.withLock({ $0.accepting }) else { return answered(.failure(.shuttingDown)) }
        if let reason = conductor.storeUnavailableReason { return answered(.failure(.storeUnavailable(reason))) }
        // Decided with the triggers waiting beside it, in one transaction (`FleetCoordinator+Batch`).
        let slots = reserveStarts(1)
        if !decisions.submit(PendingTrigger(coordinator: self, entry: TriggerBatch.Entry(trigger: trigger), slots: slots,
                                            follower: follower, answered: answered)) {
            send(.settled(granted: slots, claimed: []))
        }
    }

    /// After a batch's transaction, on the loop: the runs it started go to the conductor (each
    /// with its caller as follower), its other slots come back, and each caller hears its decision.
    func conclude(_ jobs: [PendingTrigger], _ results: [Result<Decided, any Error>]) {
        reactor.onLoop { [self] in
            var followers: [Int64: Conductor.Follower] = [:]
            var claimed: [Claimed] = []
            for (job, result) in zip(jobs, results) {
                guard case let .success(decided) = result else { continue }
                // A new run's secrets' values stay here until it starts (now, or later on this host).
                switch decided.decision {
                case let .created(id), let .followUp(id, _), let .replaced(id, _):
                    if !job.entry.trigger.secrets.isEmpty { send(.keep(id, secrets: job.entry.trigger.secrets)) }
                default: break
                }
                guard let run = decided.claimed else { continue }
                claimed.append(run)
                if let follower = job.follower { followers[run.run.id] = follower }
            }
            send(.settled(granted: jobs.reduce(0) { $0 + $1.slots }, claimed: claimed), followers: followers)
            for (job, result) in zip(jobs, results) { finish(job.entry.trigger, result, follower: job.follower, answered: job.answered) }
        }
    }

    /// After the trigger's transaction, on the loop, its run (if it started one) handed: the
    /// runs it replaced here stop, and the caller hears the decision.
    func finish(_ trigger: Trigger, _ result: Result<Decided, any Error>, follower: Conductor.Follower?,
                        answered: @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void) {
        let decided: Decided
        switch result {
        case let .success(value): decided = value
        case let .failure(error): return answered(.failure(Self.batonError(error)))
        }
        if let wait = decided.debouncing { armDebounce(decided.run.id, after: wait) }
        for id in decided.stopHere { conductor.stop(run: id, .replaced(by: decided.decision.run)) }
        if case let .rejected(id, line) = decided.decision {
            return answered(.failure(.busy(run: id, action: trigger.action.name, phase: decided.run.phase,
                                           since: decided.run.startedAt ?? decided.run.queuedAt, line: line)))
        }
        var run = decided.run
        run.waiting = decided.waiting
        if decided.claimed != nil {
            run = conductor.snapshot(of: run.id).map(withHost) ?? decided.claimed?.run ?? run
        }
        // The decision first: following a run that has already ended (its slot ran) ends the
        // follower at once, and its answer must carry the decision.
        answered(.success((decided.decision, run)))
        if decided.claimed == nil, let follower { follow(run, seq: decided.seq, follower) }
    }

    func newRun(_ decision: FlightTable.Decision, _ trigger: Trigger, _ window: DebounceWindow?,
                        at now: Timestamp) -> (RunSnapshot, Transition) {
        let detail = KeyDecision.queuedDetail(decision, via: trigger.via, window: window)
        var run = RunSnapshot(id: decision.run, action: trigger.action.name, key: trigger.key, phase: .queued, policy: trigger.policy,
                              params: trigger.params, trigger: trigger.peer, queuedAt: now)
        run.update { run in
            run.host = host.name
            run.via = trigger.via
            run.slot = trigger.slot
            run.debounceUntil = window?.deadline
            // What it waits for, as its answer tells (its row's `until` is the database's, `FleetApprovals.insert`).
            run.approval = ConductorState.approvalWait(trigger.action, at: now)
        }
        return (run, Transition(runID: run.id, seq: 1, from: nil, to: .queued, at: now, detail: detail))
    }

    /// Runs a transaction again after a deadlock or serialization failure (at most 5 times).
    static func retrying<T>(_ body: () throws -> T) throws -> T {
        var tries = 0
        while true {
            do { return try body() } catch let error as PGError where error.isRetryable && tries < 5 { tries += 1 }
        }
    }
}

/// A stop asked by another host, stored in the run's row as the engine writes it
/// (`RunMachine.Stop.recordText`), and announced.
enum StopRequest {
    /// The payload of the notification (channel `baton`) that a stop was marked: a host's feed
    /// reads the stops asked of its runs when it hears one (`FeedWake.stops`), and once a second
    /// anyway, not at every commit of every host.
    static let announced = "stop"

    /// Marks a loading or retrying run for its owner to stop, and announces it when it commits;
    /// its rows: the owner's incarnation (none when the run was not loading or retrying, or was
    /// marked already). The first stop wins, as in the owner's machine (`RunMachine`): a later one
    /// leaves the mark, which the owner's own (`JournalEntry.stopAsked`) may still correct.
    static func mark(_ id: Int64, _ stop: RunMachine.Stop) -> FleetJournal.Statement {
        ("""
            WITH marked AS (UPDATE runs SET stop = $2 WHERE id = $1 AND phase IN ('loading', 'retrying') AND stop IS NULL RETURNING incarnation)
            SELECT incarnation, pg_notify('baton', '\(announced)') FROM marked
            """, [String(id), stop.recordText])
    }
}
