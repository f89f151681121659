import BatonCore
import FoundationEssentials

/// The writes of a decided batch: every entry's rows in entry order, then the slots and windows
/// as the batch left them, the `loading` of each new run that starts, the runs the shares are
/// answered with, then NOTIFY and COMMIT: one pipeline. Runs that claim locks take them (or
/// their place in line) after it, in the same transaction, before the commit.
extension FleetCoordinator {
    /// What the write pipeline has to check and read back.
    private struct Written {
        var statements: [FleetJournal.Statement] = []
        var runs: [Int64: RunSnapshot] = [:]
        /// Each new run's action: its trigger's, the definition it starts with and is stored by.
        var actions: [Int64: Action] = [:]
        /// Each new run's revision (`Action.revision`: its row in `revisions`).
        var revisions: [Int64: String] = [:]
        /// Results that must have changed one row (guarded updates), with what they were.
        var checks: [(index: Int, what: String)] = []
        /// The entry whose answer is the run read at a result.
        var reads: [Int: Int] = [:]
        var claimed: [Int64: Claimed] = [:]
        /// New runs whose action claims locks, started after the pipeline.
        var locked: [Int64] = []
        /// The start slots granted to the batch and not yet taken by a run it starts.
        var slots = 0
        /// The result of each new run's approval row, which returns its `until` by the database's clock.
        var untils: [Int64: Int] = [:]
        /// New runs that wait for approval and fire an awaiting hook, after the pipeline (`FleetHooks.fireAwaiting`).
        var awaiting: [(run: RunSnapshot, action: Action)] = []
    }

    /// The awaiting hook of new run `run`, behind a savepoint: one that fails (the database
    /// refused its run) is logged, with the run and its hook, and the trigger goes on, as one
    /// machine never refuses a trigger for its hook. A deadlock or a lost connection still
    /// fails the batch (decided again, or answered so).
    func fireAwaiting(_ run: RunSnapshot, _ action: Action, on db: PGConnection) throws {
        try db.execute("SAVEPOINT awaiting_hook")
        // The definitions inserted before it: those it inserts are rolled back with it.
        let pending = db.definitions.pending
        do {
            try FleetHooks.fireAwaiting(run, action, on: db, as: host)
        } catch let error as PGError where !error.isConnectionProblem && !error.isRetryable {
            try db.execute("ROLLBACK TO SAVEPOINT awaiting_hook")
            db.definitions.pending = pending
            log("the awaiting hook of run \(run.id) (\(action.name)) could not fire, the trigger goes on: \(error.message)")
        }
    }

    func write(_ entries: [TriggerBatch.Entry], _ decided: TriggerBatch.Decided, slots: Int,
               on db: PGConnection) throws -> [Result<Decided, any Error>] {
        let now = decided.stamp ?? Timestamp.now
        var written = Written(slots: slots)
        // A transaction of its own (begun by the batch's opening): nothing of an earlier one is pending.
        db.definitions.ended(committed: false)
        for (index, entry) in entries.enumerated() {
            try rows(of: entry, decided.outcomes[index], stops: decided.stops[index] ?? [], definitions: decided.definitions, at: now,
                     on: db, &written)
        }
        for (key, slot) in decided.slots.sorted(by: { $0.key < $1.key }) { written.statements.append(FleetJournal.storeSlot(slot, key: key)) }
        for (run, window) in decided.windows.sorted(by: { $0.key < $1.key }) { written.statements.append(FleetDebounce.store(window, run: run)) }
        try starts(decided.starts, at: now, &written)
        for (index, outcome) in decided.outcomes.enumerated() {
            guard let run = outcome.sharedRun else { continue }
            written.reads[index] = written.statements.count
            // With its approval (`runWithApproval`): one that joins a waiting run is told the wait, as its maker was.
            written.statements.append(FleetApprovals.runWithApproval(run))
        }
        // A new run (and what its replace stopped) is news to the fleet; a record is not.
        // For the other hosts: this host's feed is told in-process (`FleetCompany`).
        let news = decided.outcomes.contains { $0.createsRun }
        // This host's feed is handed what it committed (`OwnCommit`).
        let ask = company.ask(at: reactor.clock.now), asked = ask?.statements ?? []
        let closing = (news && company.notifies ? [(company.notice, [])] : []) + asked + [("COMMIT", [])]
        // Slots not taken come back when the batch settles (`conclude`), as do those of a batch that fails.
        var attempts: [Int64: Attempt] = [:]
        let later = !written.locked.isEmpty || !written.awaiting.isEmpty
        // The definitions of its new runs, stored with them (once per revision and connection, `FleetRunDefinitions`).
        let definitions = try revisionInserts(written.runs.keys.compactMap { id in
            written.actions[id].flatMap { action in written.revisions[id].map { ($0, action) } }
        }, on: db)
        let results = try db.pipeline(written.statements + definitions + (later ? [] : closing))
        for check in written.checks where results[check.index].affected != 1 { throw PGError(message: check.what) }
        // Their hook runs, in this transaction: once fleet-wide, by the host that made the wait.
        for (run, action) in written.awaiting { try fireAwaiting(run, action, on: db) }
        for id in written.locked {
            guard let run = written.runs[id], written.slots > 0 else { continue }
            let attempt = try claim(run, seq: 1, action: written.actions[id], on: db)
            if attempt.claimed != nil { written.slots -= 1 }
            attempts[id] = attempt
        }
        let closed = later ? try db.pipeline(closing) : results
        // Committed: its definitions (and its awaiting hooks') are written.
        db.definitions.ended(committed: true)
        company.committed(ask, closed.dropLast())
        return answers(entries, decided, written, attempts, results)
    }

    /// One entry's rows: its record, or its new run (and the runs its replace stops).
    private func rows(of entry: TriggerBatch.Entry, _ outcome: TriggerBatch.Outcome, stops: [FleetStop], definitions: [Int64: String],
                      at now: Timestamp, on db: PGConnection, _ written: inout Written) throws {
        let trigger = entry.trigger
        switch outcome {
        case .refused:
            return
        case let .denied(_, decision):
            let record = TriggerRecord(runID: nil, action: trigger.action.name, key: trigger.key, decision: decision,
                                       policy: trigger.policy, peer: trigger.peer, at: now, params: trigger.params, via: trigger.via)
            written.statements.append(FleetJournal.insertTrigger(record, host: host.name))
        case let .needRefused(refusal):
            // Recorded against the needed action, as one machine records it (`NeedRefusal.record`).
            if let record = refusal.record(via: KeyDecision.NeedRefusal.via(triggerOf: trigger.action.name), peer: trigger.peer, at: now) {
                written.statements.append(FleetJournal.insertTrigger(record, host: host.name))
            }
        case let .shared(decision):
            // Recorded as the engine records a shared decision (`KeyDecision.record`).
            let recorded = KeyDecision.shared(decision).record ?? .rejected
            let record = TriggerRecord(runID: decision.run, action: trigger.action.name, key: trigger.key, decision: recorded,
                                       policy: trigger.policy, peer: trigger.peer, at: now, params: trigger.params, via: trigger.via)
            written.statements.append(FleetJournal.insertTrigger(record, host: host.name))
            if case .rejected = decision {} else { written.statements += deliveryRecord(trigger, run: decision.run, at: now) }
        case let .debounced(run):
            let record = TriggerRecord(runID: run, action: trigger.action.name, key: trigger.key, decision: .debounced,
                                       policy: trigger.policy, peer: trigger.peer, at: now, params: trigger.params, via: trigger.via)
            written.statements += [FleetJournal.insertTrigger(record, host: host.name)] + deliveryRecord(trigger, run: run, at: now)
        case let .created(decision, window):
            let (run, queued) = newRun(decision, trigger, window, at: now)
            written.runs[run.id] = run
            written.actions[run.id] = trigger.action
            let revision = try db.definitions.revision(of: trigger.action)
            written.revisions[run.id] = revision
            // Its origin: its trigger's, or (a need's) the one the needing run passes on (`FleetJournal.Origin`).
            let origin = trigger.neededBy.map(FleetJournal.Origin.parent) ?? .uid(trigger.peer?.uid)
            written.statements += [FleetJournal.insertRun(run, as: host, definition: definitions[run.id] ?? trigger.action.fingerprint,
                                                          revision: revision, origin: origin),
                                   try FleetJournal.insertTransition(queued)] + deliveryRecord(trigger, run: run.id, at: now)
            // A run that waits for an approver's yes: its wait, in the transaction that makes it.
            if let rule = trigger.action.approve {
                written.untils[run.id] = written.statements.count
                written.statements.append(FleetApprovals.insert(run.id, action: run.action, rule))
                if trigger.action.hooks.awaiting(run) != nil { written.awaiting.append((run, trigger.action)) }
            }
            // A run that needs others waits for them to be asked and met (`FleetNeeds`).
            if !trigger.action.needs.isEmpty { written.statements.append(FleetNeeds.asking(run.id)) }
            for stop in stops { try self.stop(stop, &written) }
        }
    }

    /// A replace's stop, as the engine decided it (`FleetStop`): a queued run's end, guarded (it
    /// must apply: the batch read it under its key's row), or the mark its owner stops it by.
    private func stop(_ stop: FleetStop, _ written: inout Written) throws {
        if stop.end != nil { written.checks.append((written.statements.count, stop.refusal)) }
        written.statements += try stop.statements()
    }

    /// The new runs whose key is free: each takes a start slot if one is free and its `loading`
    /// goes in the pipeline; one whose action claims locks is started after it (`claim`).
    private func starts(_ ids: [Int64], at now: Timestamp, _ written: inout Written) throws {
        for id in ids {
            guard let run = written.runs[id], let action = written.actions[id] else { continue }
            if !action.locks.isEmpty {
                written.locked.append(id)
                continue
            }
            let loading = Transition(runID: id, seq: 2, from: .queued, to: .loading, at: now, detail: TransitionDetail(attempt: 1))
            let statements = [FleetJournal.update(loading, as: host), try FleetJournal.insertTransition(loading)]
            guard written.slots > 0 else { continue }
            written.slots -= 1
            written.checks.append((written.statements.count, "run \(id) could not be started in its own transaction"))
            written.statements += statements
            written.claimed[id] = Claimed(run: run.applying(loading), seq: 2, action: action)
        }
    }

    /// Each entry's answer, once the batch committed.
    private func answers(_ entries: [TriggerBatch.Entry], _ decided: TriggerBatch.Decided, _ written: Written,
                         _ attempts: [Int64: Attempt], _ results: [PGRows]) -> [Result<Decided, any Error>] {
        decided.outcomes.enumerated().map { index, outcome -> Result<Decided, any Error> in
            switch outcome {
            case let .refused(error), let .denied(error, _):
                return .failure(error)
            case let .needRefused(refusal):
                return .failure(refusal.error)
            case .shared, .debounced:
                let decision: FlightTable.Decision = if case let .shared(shared) = outcome { shared } else { .joined(outcome.sharedRun ?? 0) }
                guard let at = written.reads[index], let row = results[at].first else { return .failure(BatonError.unknownRun(decision.run)) }
                let read = FleetApprovals.run(row)
                return .success(Decided(decision: decision, run: read.run, seq: read.seq))
            case let .created(decision, _):
                let id = decision.run
                let claimed = written.claimed[id] ?? attempts[id]?.claimed
                var run = claimed?.run ?? written.runs[id]!
                // Its wait's end as its row has it, by the database's clock.
                if let at = written.untils[id], run.approval != nil {
                    run.approval?.until = results[at].first?[0].flatMap { Int64($0) }.map(Timestamp.init(rawValue:))
                }
                var answer = Decided(decision: decision, run: run, seq: claimed?.seq ?? 1,
                                     stopHere: (decided.stops[index] ?? []).filter(\.here).map(\.run), claimed: claimed,
                                     debouncing: decided.windows[id].map { $0.deadline - $0.first })
                if case let .waits(wait)? = attempts[id] { answer.waiting = wait }
                return .success(answer)
            }
        }
    }

    /// The statement that records the trigger's delivery with `run`, if it carries one.
    func deliveryRecord(_ trigger: Trigger, run: Int64, at now: Timestamp) -> [FleetJournal.Statement] {
        trigger.delivery.map { [FleetJournal.insertDelivery($0, runID: run, at: now, host: host.name)] } ?? []
    }
}

extension TriggerBatch.Outcome {
    /// The run a trigger that made none is answered with (read back after the writes).
    var sharedRun: Int64? {
        switch self {
        case let .shared(decision): decision.run
        case let .debounced(run): run
        case .refused, .denied, .needRefused, .created: nil
        }
    }

    /// Whether the trigger made a run.
    var createsRun: Bool {
        if case .created = self { return true }
        return false
    }
}
