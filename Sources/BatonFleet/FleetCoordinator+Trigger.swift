import BatonCore
import FoundationEssentials

extension FleetCoordinator {
    /// What a trigger's transaction decided.
    struct Decided {
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

    public func trigger(_ trigger: Trigger, follower: Conductor.Follower?,
                        answered: @escaping @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void) {
        guard accepting.withLock({ $0 }) else { return answered(.failure(.shuttingDown)) }
        if let reason = conductor.storeUnavailableReason { return answered(.failure(.storeUnavailable(reason))) }
        decisions.submit({ [self] db in try Self.retrying { try decide(trigger, on: db) } }) { [self] result in
            if case let .failure(error as PGError) = result, error.isUniqueViolation {
                // Its start was refused by the one-loading-run-per-key index: decide again
                // without starting it; it starts when the key is free. Or another host recorded
                // the trigger's delivery first: deciding again finds its run.
                log("a trigger was refused by a unique index, decided again: \(error.message)")
                return decisions.submit({ [self] db in try Self.retrying { try decide(trigger, startIfFree: false, on: db) } }) { [self] result in
                    finish(trigger, result, follower: follower, answered: answered)
                }
            }
            finish(trigger, result, follower: follower, answered: answered)
        }
    }

    /// After the trigger's transaction: the run it started goes to the conductor, the runs it
    /// replaced here stop, and the caller hears the decision.
    private func finish(_ trigger: Trigger, _ result: Result<Decided, any Error>, follower: Conductor.Follower?,
                        answered: @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void) {
        let decided: Decided
        switch result {
        case let .success(value): decided = value
        case let .failure(error): return answered(.failure(Self.batonError(error)))
        }
        if let claimed = decided.claimed { hand(claimed, follower: follower) }
        if let wait = decided.debouncing { armDebounce(decided.run.id, after: wait) }
        for id in decided.stopHere { conductor.stop(run: id, .replaced(by: decided.decision.run)) }
        if case let .rejected(id) = decided.decision {
            return answered(.failure(.busy(run: id, action: trigger.action.name, phase: decided.run.phase,
                                           since: decided.run.startedAt ?? decided.run.queuedAt)))
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

    /// The trigger's transaction: lock the key's slot, decide as `KeySlot` says, write the new
    /// run or the trigger record, ask the runs a replace stops to stop, and tell the fleet.
    /// Three round trips in the common cases (libpq pipelines): open and lock the slot; take an
    /// id if the decision may need one; write everything and commit. A run it starts holds a
    /// start slot (`reserveStart`) from the moment the slot is read.
    func decide(_ trigger: Trigger, startIfFree: Bool = true, on db: PGConnection) throws -> Decided {
        do {
            var opening: [FleetJournal.Statement] = [
                ("BEGIN", []),
                ("INSERT INTO keys (key) VALUES ($1) ON CONFLICT DO NOTHING", [trigger.key]),
                ("SELECT holder, follow_up, draining FROM keys WHERE key = $1 FOR UPDATE", [trigger.key]),
            ]
            // The key's last success, and the database's clock once the row is held: what a
            // cooldown is decided from (`cooled`), as exactly as the slot, by the same lock.
            let lastSuccess = trigger.action.cooldown.map { _ in opening.count }
            if lastSuccess != nil { opening.append(FleetCooldown.lastSuccess(of: trigger.key)) }
            // The key's run not yet started and its window, and the database's clock once the
            // row is held: what a debounced trigger joins, or the clock a new window opens on.
            let debounced = trigger.action.debounce.map { _ in opening.count }
            if debounced != nil { opening.append(FleetDebounce.pending(of: trigger.key)) }
            // A delivery any host recorded made its run, read after the key's row is locked (each
            // statement sees what committed before it began). A transaction on another key that
            // records the same delivery meanwhile is caught by the table's primary key: of the
            // two, the second to insert waits for the first, fails with a unique violation, and
            // is decided again (`trigger`), finding the first one's run.
            let delivered = trigger.delivery.map { _ in opening.count }
            if let delivery = trigger.delivery { opening.append(FleetJournal.findDelivery(hook: delivery.hook, delivery: delivery.id)) }
            // The slot's run, whichever host made it, so that two hosts firing one slot make one
            // run (`SlotBook.decide`, as on one machine); two at once are caught by the unique
            // index `runs_action_slot` in the same way.
            if let at = trigger.slot {
                opening.append(("SELECT id, phase FROM runs WHERE action = $1 AND slot = $2", [trigger.action.name, String(at.rawValue)]))
            }
            let opened = try db.pipeline(opening)
            if let delivery = trigger.delivery, let delivered, let run = opened[delivered].first?[0].flatMap({ Int64($0) }) {
                throw BatonError.delivered(run: run, hook: delivery.hook, delivery: delivery.id)
            }
            if trigger.slot != nil, let row = opened.last?.first {
                let ended = Phase(rawValue: row[1] ?? "")?.isTerminal ?? true
                switch SlotBook.decide(run: row[0].flatMap { Int64($0) }, ended: ended) {
                case .free: break
                case let .inFlight(id): return try share(.joined(id), trigger, at: .now, on: db)
                case let .ran(id): return try share(.slotRan(id), trigger, at: .now, on: db)
                }
            }
            var slot = KeySlot(row: opened[2].first ?? [nil, nil, nil])
            // As on one machine: a burst shares its pending run, after the slot, before the
            // cooldown and the policy; a run this trigger makes opens a window on the same clock.
            var window: DebounceWindow?
            if let debounced {
                guard let reading = FleetDebounce.reading(opened[debounced].rows, slot: slot) else {
                    throw PGError(message: "the debounce of key \(trigger.key) could not be read")
                }
                if let pending = reading.pending {
                    return try joinPending(FleetDebounce.joined(pending, at: reading.now), trigger, at: .now, on: db)
                }
                window = DebounceWindow(trigger.action, first: reading.now)
            }
            // As on one machine: after the slot, before the policy (which cannot get round it).
            if let lastSuccess, let success = FleetCooldown.cooling(opened[lastSuccess].first, trigger) {
                return try share(.cooled(success), trigger, at: .now, on: db)
            }
            let needsID = slot.holder == nil || trigger.policy == .replace || (trigger.policy == .queue && slot.followUp == nil)
            let candidate = needsID ? Int64(try db.query("SELECT nextval('runs_id_seq')").first?[0] ?? "") ?? 0 : 0
            let decision = slot.trigger(policy: trigger.policy, candidate: candidate)
            let now = Timestamp.now
            switch decision {
            case .created, .followUp:
                return try create(decision, trigger, slot, window, startIfFree: startIfFree, at: now, on: db)
            case .replaced:
                return try replace(decision, trigger, slot, window, at: now, on: db)
            case .joined, .coalesced, .rejected:
                return try share(decision, trigger, at: now, on: db)
            case .cooled, .slotRan:
                // Cooldowns and slots are decided above, before the key's slot.
                throw PGError(message: "a key slot decided \(decision), which it never decides")
            }
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// A trigger that makes no run (joined, coalesced, rejected, cooled, or its slot already ran):
    /// its record, the run as it is, then the commit.
    private func share(_ decision: FlightTable.Decision, _ trigger: Trigger, at now: Timestamp, on db: PGConnection) throws -> Decided {
        let id = decision.run
        switch decision {
        case .joined, .coalesced: try refuseIfDefinedOtherwise(id, trigger, on: db)
        default: break
        }
        let kind: TriggerRecord.Decision = switch decision {
        case .joined: .joined
        case .coalesced: .coalesced
        case .slotRan: .slotRan
        case .cooled: .cooled
        default: .rejected
        }
        let record = TriggerRecord(runID: id, action: trigger.action.name, key: trigger.key, decision: kind, policy: trigger.policy,
                                   peer: trigger.peer, at: now, params: trigger.params)
        let shared = kind == .rejected ? [] : deliveryRecord(trigger, run: id, at: now)
        let results = try db.pipeline([FleetJournal.insertTrigger(record, host: host.name),
                                       ("SELECT \(FleetRows.runColumns), last_seq FROM runs WHERE id = $1", [String(id)])]
                                      + shared + [("COMMIT", [])])
        guard let row = results[1].first else { throw BatonError.unknownRun(id) }
        return Decided(decision: decision, run: FleetRows.run(row), seq: Int(row[FleetRows.runColumnCount] ?? "") ?? 1)
    }

    /// A debounced trigger joins its key's pending run (`pending`, its window pushed back by the
    /// engine's rule): the new deadline, its record (`debounced`), the run as it is now, then
    /// the commit. Answered as a join, as on one machine. The run's host hears of the new
    /// deadline when its timer wakes it at the old one (`startWaiting`).
    private func joinPending(_ pending: FleetDebounce.Pending, _ trigger: Trigger, at now: Timestamp, on db: PGConnection) throws -> Decided {
        let id = pending.run
        try refuseIfDefinedOtherwise(id, trigger, on: db)
        let record = TriggerRecord(runID: id, action: trigger.action.name, key: trigger.key, decision: .debounced, policy: trigger.policy,
                                   peer: trigger.peer, at: now, params: trigger.params)
        let results = try db.pipeline([FleetDebounce.store(pending.window, run: id), FleetJournal.insertTrigger(record, host: host.name),
                                       ("SELECT \(FleetRows.runColumns), last_seq FROM runs WHERE id = $1", [String(id)])]
                                      + deliveryRecord(trigger, run: id, at: now) + [("COMMIT", [])])
        guard results[0].affected == 1, let row = results[2].first else { throw BatonError.unknownRun(id) }
        return Decided(decision: .joined(id), run: FleetRows.run(row), seq: Int(row[FleetRows.runColumnCount] ?? "") ?? 1)
    }

    /// A join or coalesce shares the run's outcome: refused (the transaction rolled back by the
    /// caller) when the run was created from another definition of the action than this host's.
    private func refuseIfDefinedOtherwise(_ id: Int64, _ trigger: Trigger, on db: PGConnection) throws {
        guard let row = try db.query("SELECT definition, host FROM runs WHERE id = $1", [String(id)]).first,
              let theirs = row[0], theirs != trigger.action.fingerprint else { return }
        throw BatonError.definitionMismatch(run: id, action: trigger.action.name, host: row[1] ?? "?")
    }

    /// A new run (created, or the follow-up): its row, its `queued`, the slot, and, when its key
    /// and a slot are free, its `loading` too (one commit to start), then the commit. A run that
    /// claims locks takes them (or its place in their line) after its row is written, in the
    /// same transaction (`claim`): one round trip more. A debounced run (`window`) is never
    /// started here: its host starts it once the window has passed (`armDebounce`, `startWaiting`).
    private func create(_ decision: FlightTable.Decision, _ trigger: Trigger, _ slot: KeySlot, _ window: DebounceWindow?,
                        startIfFree: Bool, at now: Timestamp, on db: PGConnection) throws -> Decided {
        let (run, queued) = newRun(decision, trigger, window, at: now)
        var statements = [FleetJournal.insertRun(run, as: host, definition: trigger.action.fingerprint), try FleetJournal.insertTransition(queued),
                          FleetJournal.storeSlot(slot, key: trigger.key)]
        if let window { statements.append(FleetDebounce.store(window, run: run.id)) }
        if conductor.action(named: run.action).map({ !$0.locks.isEmpty }) ?? false {
            var decided = try createLocked(decision, run, statements + deliveryRecord(trigger, run: run.id, at: now),
                                           starts: startIfFree && window == nil && slot.startable == run.id, on: db)
            decided.debouncing = window.map { $0.deadline - $0.first }
            return decided
        }
        var claimed: Claimed?
        let loading = Transition(runID: run.id, seq: 2, from: .queued, to: .loading, at: now, detail: TransitionDetail(attempt: 1))
        let starting = [FleetJournal.update(loading, as: host), try FleetJournal.insertTransition(loading)]
        if startIfFree, window == nil, slot.startable == run.id, let action = conductor.action(named: run.action), reserveStart() {
            statements += starting
            claimed = Claimed(run: run.applying(loading), seq: 2, action: action)
        }
        statements += deliveryRecord(trigger, run: run.id, at: now)
        do {
            let results = try db.pipeline(statements + [("NOTIFY baton", []), ("COMMIT", [])])
            if claimed != nil, results[3].affected != 1 { throw PGError(message: "run \(run.id) could not be started in its own transaction") }
        } catch {
            if claimed != nil { releaseStart() }
            throw error
        }
        return Decided(decision: decision, run: claimed?.run ?? run, seq: claimed?.seq ?? 1, claimed: claimed,
                       debouncing: window.map { $0.deadline - $0.first })
    }

    /// `create` for a run whose action claims locks: its rows, then, when its key and a start
    /// slot are free, its locks taken and its `loading` written, or its place in their line.
    private func createLocked(_ decision: FlightTable.Decision, _ run: RunSnapshot, _ statements: [FleetJournal.Statement], starts: Bool,
                              on db: PGConnection) throws -> Decided {
        try db.pipeline(statements)
        let reserved = starts && reserveStart()
        do {
            let attempt = reserved ? try claim(run, seq: 1, on: db) : .none
            try db.pipeline([("NOTIFY baton", []), ("COMMIT", [])])
            let claimed = attempt.claimed
            if reserved && claimed == nil { releaseStart() }
            var decided = Decided(decision: decision, run: claimed?.run ?? run, seq: claimed?.seq ?? 1, claimed: claimed)
            if case let .waits(wait) = attempt { decided.waiting = wait }
            return decided
        } catch {
            if reserved { releaseStart() }
            throw error
        }
    }

    /// A replacing run: the runs it replaces are stopped (queued ones end here, others are marked
    /// for their owners), one statement at a time, then the commit.
    private func replace(_ decision: FlightTable.Decision, _ trigger: Trigger, _ slot: KeySlot, _ window: DebounceWindow?,
                         at now: Timestamp, on db: PGConnection) throws -> Decided {
        guard case let .replaced(id, stopping) = decision else { throw PGError(message: "not a replace: \(decision)") }
        let (run, queued) = newRun(decision, trigger, window, at: now)
        try db.query(FleetJournal.insertRun(run, as: host, definition: trigger.action.fingerprint))
        try db.query(try FleetJournal.insertTransition(queued))
        if let window { try db.query(FleetDebounce.store(window, run: run.id)) }
        for statement in deliveryRecord(trigger, run: id, at: now) { try db.query(statement) }
        try FleetJournal.store(slot, key: trigger.key, on: db)
        var stopHere: [Int64] = []
        for old in stopping where try stop(old, .replaced(by: id), on: db) { stopHere.append(old) }
        // A replaced run that was only queued ended here: the key may be free already.
        let row = try db.query("SELECT holder, follow_up, draining FROM keys WHERE key = $1", [trigger.key]).first ?? [nil, nil, nil]
        let starts = window == nil && KeySlot(row: row).startable == id && reserveStart()
        do {
            let attempt = starts ? try claim(run, seq: 1, on: db) : .none
            try db.execute("NOTIFY baton")
            try db.execute("COMMIT")
            let claimed = attempt.claimed
            if starts && claimed == nil { releaseStart() }
            var decided = Decided(decision: decision, run: claimed?.run ?? run, seq: claimed?.seq ?? 1, stopHere: stopHere, claimed: claimed,
                                  debouncing: window.map { $0.deadline - $0.first })
            if case let .waits(wait) = attempt { decided.waiting = wait }
            return decided
        } catch {
            if starts { releaseStart() }
            throw error
        }
    }

    /// The statement that records the trigger's delivery with `run`, if it carries one.
    private func deliveryRecord(_ trigger: Trigger, run: Int64, at now: Timestamp) -> [FleetJournal.Statement] {
        trigger.delivery.map { [FleetJournal.insertDelivery($0, runID: run, at: now, host: host.name)] } ?? []
    }

    private func newRun(_ decision: FlightTable.Decision, _ trigger: Trigger, _ window: DebounceWindow?,
                        at now: Timestamp) -> (RunSnapshot, Transition) {
        var detail = TransitionDetail()
        detail.via = trigger.via
        detail.debounce = window?.deadline.rawValue
        if case let .replaced(_, stopping) = decision { detail.replaces = stopping; detail.reason = "replace" }
        if case let .followUp(_, after) = decision { detail.reason = "follow-up of run \(after)" }
        var run = RunSnapshot(id: decision.run, action: trigger.action.name, key: trigger.key, phase: .queued, policy: trigger.policy,
                              params: trigger.params, trigger: trigger.peer, queuedAt: now)
        run.host = host.name
        run.via = trigger.via
        run.slot = trigger.slot
        run.debounceUntil = window?.deadline
        return (run, Transition(runID: run.id, seq: 1, from: nil, to: .queued, at: now, detail: detail))
    }

    /// Stops a run for another: a queued one ends here and now (whoever owns it); a loading or
    /// retrying one is marked for its owner to stop. Returns true when this host owns it and
    /// must stop it (the feed would tell it too, a little later).
    func stop(_ id: Int64, _ stop: RunMachine.Stop, on db: PGConnection) throws -> Bool {
        guard let (run, seq) = try read(id, on: db) else { return false }
        switch run.phase {
        case .queued:
            let detail = stop.detail
            _ = try FleetJournal.apply(Transition(runID: id, seq: seq + 1, from: .queued, to: stop.phase, at: .now, detail: detail),
                                       on: db, as: nil)
            return false
        case .loading, .retrying:
            let rows = try db.query("UPDATE runs SET stop = $2 WHERE id = $1 AND phase IN ('loading', 'retrying') RETURNING incarnation",
                                    [String(id), StopRequest.text(stop)]).rows
            return rows.first?[0] == host.incarnation
        case .success, .failure, .cancelled:
            return false
        }
    }

    /// Runs a transaction again after a deadlock or serialization failure (at most 5 times).
    static func retrying<T>(_ body: () throws -> T) throws -> T {
        var tries = 0
        while true {
            do { return try body() } catch let error as PGError where error.isRetryable && tries < 5 { tries += 1 }
        }
    }
}

extension FlightTable.Decision {
    /// Whether the trigger made a new run.
    var createsRun: Bool {
        switch self {
        case .created, .followUp, .replaced: true
        case .joined, .coalesced, .rejected, .cooled, .slotRan: false
        }
    }
}

/// How a stop asked by another host is stored in the run's row: `cancelled 1000`, `cancelled -`, `replaced 42`.
enum StopRequest {
    static func text(_ stop: RunMachine.Stop) -> String {
        switch stop {
        case let .cancelled(by): "cancelled \(by.map(String.init) ?? "-")"
        case let .replaced(by): "replaced \(by)"
        case .timeout, .shutdown: "cancelled -"
        }
    }

    static func parse(_ text: String) -> RunMachine.Stop {
        let parts = text.split(separator: " ")
        if parts.first == "replaced", parts.count == 2, let id = Int64(parts[1]) { return .replaced(by: id) }
        return .cancelled(by: parts.count == 2 ? UInt32(parts[1]) : nil)
    }
}
