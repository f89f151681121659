import BatonCore
import FoundationEssentials

/// Retrying runs a takeover moved to this host (`FleetTakeover.Summary.resumed`) reach its
/// conductor from their rows, never from memory alone, so that none is left retrying for good
/// (holding its key) when a hand-off is lost: a reap whose commit went through but whose answer
/// did not, or a reload that took the action away meanwhile. After each renewal of the lease
/// (`FleetLease`, after its reap) this host's retrying runs that its conductor does not hold are
/// read; once every write the conductor had queued by then is committed (`Conductor.afterWrites`:
/// a run it ended since reads ended, not retrying), they are read again, and each one left:
/// - ends as its stop mark says (`runs.stop`: a cancel or a replace asked while no conductor
///   held it), as the stop reader would have, with no other attempt;
/// - waits out its backoff here (`RecoveryDecision.resumeRetrying`, as one machine's restart),
///   while a start slot is free: a retrying run holds one, as on one machine, so resumed runs
///   never take the host past `maxConcurrentRuns`; the rest wait in their rows for the next
///   renewal, with the first claim on a slot that frees meanwhile (`CoordinatorState.waitingToResume`:
///   no queued run of this host takes it);
/// - is cancelled, reason `removed`, where this host no longer has its action (as `claim` does);
/// - stays as it is while this host is stopping: once it is gone the reaper of a host that
///   accepts runs takes it over and resumes it (a stopping host would only stop it `shutdown`).
/// One of these runs at a time (`FleetLease`), on the lease's thread, the loop and the pool.
extension FleetCoordinator {
    /// This incarnation's retrying runs that no hook made (none such is moved: `FleetTakeBack.retryingRuns`),
    /// on the lease's connection (the partial index `runs_unfinished`).
    func retryingHere(on db: PGConnection) throws -> [Int64] {
        try db.query("SELECT id FROM runs WHERE incarnation = $1 AND phase = 'retrying' AND hook_run IS NULL ORDER BY id", [host.incarnation]).rows
            .compactMap { $0[0].flatMap { Int64($0) } }
    }

    /// Hands the conductor those of `ids` (`retryingHere`) it does not hold, as the rows say once its
    /// writes so far are committed; `done` once that is over (from any thread).
    func resumeMoved(_ ids: [Int64], done: @escaping @Sendable () -> Void) {
        reactor.onLoop { [self] in
            let unknown = Set(ids.filter { conductor.snapshot(of: $0) == nil })
            guard !unknown.isEmpty else {
                noneWaitToResume()
                return done()
            }
            guard state.withLock({ $0.accepting }) else {
                log("\(unknown.count) retrying runs moved here are left for a host that takes runs: this one is stopping")
                return done()
            }
            conductor.afterWrites { [self] in
                pool.submit({ [self] db in
                    let runs = try FleetTakeBack.retryingRuns(of: host.incarnation, on: db).filter { unknown.contains($0.run.id) }
                    return (runs, try FleetTakeBack.stopMarks(of: host.incarnation, on: db), try definitions(of: runs.map(\.run), on: db))
                }) { [self] result in
                    switch result {
                    case let .success((runs, marks, actions)) where !runs.isEmpty:
                        reactor.onLoop { [self] in hand(runs, marks: marks, actions: actions, done: done) }
                    case .success:
                        reactor.onLoop { [self] in noneWaitToResume() }
                        done()
                    case let .failure(error):
                        log("the retrying runs moved here could not be read: \(error)")
                        done()
                    }
                }
            }
        }
    }

    /// On the loop: no moved run waits for a slot (none was found): none keeps one free.
    func noneWaitToResume() {
        _ = send(.reserveToResume(wanted: 0, running: conductor.runningCount, waiting: 0))
    }

    /// On the loop: resumes `runs` (none of which the conductor held when they were read) while
    /// start slots are free, each by the definition it was triggered with (`actions`, by id), ends
    /// those a stop marked (`marks`) and cancels those with none (their action gone, none stored).
    private func hand(_ runs: [UnfinishedRun], marks: [Int64: RunMachine.Stop], actions: [Int64: RunDefinition],
                      done: @escaping @Sendable () -> Void) {
        var resumable: [Claimed] = []
        var ends: [(UnfinishedRun, RunMachine.Stop?, String?)] = []
        for unfinished in runs where conductor.snapshot(of: unfinished.run.id) == nil {
            let mark = marks[unfinished.run.id], definition = actions[unfinished.run.id], action = definition?.action
            // Moved here because the takeover's facts (`RecoveryDecision.facts`) said it may resume; what has
            // changed since decides again, by the engine's rule for one machine's restart: a stop first, then
            // an action gone (no definition, or one refused), then the resume, by the definition it was triggered with.
            let facts = RecoveryDecision.Facts(phase: .retrying, actionKnown: action != nil, mayResumeRetrying: true, stopped: mark != nil)
            switch (RecoveryDecision.decide(facts), action) {
            case let (.resumeRetrying, action?):
                var claimed = Claimed(run: unfinished.run, seq: unfinished.lastSeq, action: action)
                (claimed.retryDue, claimed.outputTotal) = (unfinished.retryDue ?? .now, unfinished.outputTotal)
                resumable.append(claimed)
            case (.endStopped, _): ends.append((unfinished, mark, nil))
            default:  // `.drop`: this host no longer has its action, or refuses the definition stored
                if case let .refused(why) = definition { ends.append((unfinished, nil, why)) } else { ends.append((unfinished, nil, nil)) }
            }
        }
        var slots = 0
        for case let .granted(count) in send(.reserveToResume(wanted: resumable.count, running: conductor.runningCount, waiting: resumable.count)) {
            slots = count
        }
        let waiting = resumable.dropFirst(slots).map(\.run.id)
        if waitingForSlot.access({ old in defer { old = waiting }; return old != waiting }), !waiting.isEmpty {
            log("\(waiting.count) retrying runs moved here wait for a free slot (maxConcurrentRuns \(limit)) to resume: "
                + waiting.map { "run \($0)" }.joined(separator: ", "))
        }
        // Handed as the runs a start claims are: counted as this host's, their slots given back once the conductor counts them.
        if slots > 0 { send(.settled(granted: slots, claimed: Array(resumable.prefix(slots)))) }
        guard !ends.isEmpty else { return done() }
        pool.submit({ [self, ends] db in for (run, mark, refused) in ends { try end(run, as: mark, refused: refused, on: db) } }) { [self] result in
            if case let .failure(error) = result { log("retrying runs moved here that were stopped, or whose action is gone, could not be ended: \(error)") }
            done()
        }
    }

    /// Ends a retrying run of this host the conductor does not hold: as its stop mark says (`cancelled`: a
    /// cancel's, or a replace's), or, with none, `cancelled`, reason `removed` (this host no longer has its action).
    /// Neither end fires hooks nor counts towards a pause (only a success or a failure does). One whose definition
    /// this host refuses (`refused`, `lookUp`) ends `failure`, reason `definition`, with no other attempt.
    private func end(_ unfinished: UnfinishedRun, as mark: RunMachine.Stop?, refused: String?, on db: PGConnection) throws {
        let run = unfinished.run
        let removed = refused.map { TransitionDetail(reason: "definition", error: $0) }
            ?? TransitionDetail(reason: "removed", error: "action \(run.action) is no longer configured on \(host.name)")
        let detail = mark?.detail ?? removed
        let to = mark?.phase ?? (refused == nil ? .cancelled : .failure)
        let transition = Transition(runID: run.id, seq: unfinished.lastSeq + 1, from: .retrying, to: to, at: .now, detail: detail)
        let ended = try FleetCoordinator.retrying {
            try db.transaction(opening: [FleetJournal.lockKeys(runs: [run.id], keys: [])]) { _ in
                guard try FleetJournal.apply(transition, on: db, as: host) else { return false }
                try db.execute("NOTIFY baton")
                return true
            }
        }
        guard ended else { return }
        log(mark.map { "run \(run.id) was moved here to wait to retry, and stopped meanwhile (\($0.recordText)): ended \(transition.to.rawValue), no other attempt" }
            ?? refused.map { "run \(run.id) was moved here to wait to retry, but \($0): failed, reason definition" }
            ?? "run \(run.id) was moved here to wait to retry, but action \(run.action) is not configured here: cancelled")
    }
}
