import BatonCore

/// Hooks across hosts. The host that records a run's end decides its hooks in the same
/// transaction (`JournalEntry.hooks`, after the end), holding the slot rows of the run's key and
/// of every hook's key, locked together in key order (`FleetJournal.lockKeys`): which hooks fire
/// comes from the key's last outcome in its row (`keys.last_outcome`, read and replaced by the
/// end under the same lock), and each hook's trigger is decided against its key's row as any
/// trigger is (`KeySlot`, cooldown from the row, `FleetCooldown`). So an end and its hook runs
/// commit together or not at all: a host killed after the commit leaves a queued hook run that
/// the reaper hands to a survivor (or its own restart), which tells it what fired it from the
/// firing run's row and output (`context`).
enum FleetHooks {
    /// The keys the firings among `entries` may trigger.
    static func keys(_ entries: [JournalEntry]) -> [String] {
        var keys: Set<String> = []
        for case let .hooks(firing) in entries { keys.formUnion(firing.hooks.targets.values.flatMap(locked)) }
        return keys.sorted()
    }

    /// The keys a hook's trigger may make runs in or decide its needs on: its target's, its
    /// needed keys' (`neededKeys`), and those of the awaiting hooks its new run may fire as it
    /// waits for approval (`awaitingKeys`).
    static func locked(_ target: HookTarget) -> [String] {
        [target.key] + neededKeys(of: target) + awaitingKeys(of: target.action, hookRun: true)
    }

    /// The keys whose facts a hook's trigger of `target` decides its needs on
    /// (`KeyDecision.needed`); none for an action without needs.
    static func neededKeys(of target: HookTarget) -> [String] {
        KeyDecision.needed(by: target.action, params: target.params).map(\.key)
    }

    /// The keys a new run of `action` may make hook runs in as it begins to wait for approval:
    /// its awaiting hook's (`HookTargets.awaiting`), then, where that hook's run waits too and
    /// its hooks chain, that one's, and so on; each once, each with its needed keys.
    static func awaitingKeys(of action: Action, hookRun: Bool) -> [String] {
        var keys: [String] = []
        var needed: [String] = []
        var next = action.approve != nil && action.hooks.fires(hookRun: hookRun) ? action.hooks.targets[.awaiting] : nil
        while let target = next, !keys.contains(target.key) {
            keys.append(target.key)
            needed += neededKeys(of: target)
            let hooked = target.action
            next = hooked.approve != nil && hooked.hooks.fires(hookRun: true) ? hooked.hooks.targets[.awaiting] : nil
        }
        return keys + needed
    }

    /// The awaiting hook of `run`, a new run of an action with `approve` whose wait the caller's
    /// transaction writes (`HookTargets.awaiting`, the engine's rule): decided there, by the
    /// host whose transaction made the wait, so it fires once fleet-wide. The caller holds the
    /// hook's key row (`awaitingKeys`, locked with its own keys in key order).
    static func fireAwaiting(_ run: RunSnapshot, _ action: Action, on db: PGConnection, as me: FleetHost) throws {
        guard action.approve != nil, let target = action.hooks.awaiting(run) else { return }
        try trigger(target, cause: HookCause(run: run.id, action: run.action, event: .awaiting), on: db, as: me)
    }

    /// The keys the hooks of `actions` may trigger: what the reaper locks with a dead host's
    /// keys, since the ends it writes fire their hooks.
    static func keys(of actions: [Action]) -> [String] {
        Set(actions.flatMap { $0.hooks.targets.values.flatMap(locked) }).sorted()
    }

    /// The statements that give the hook keys of `actions` their rows and lock them with the
    /// keys of `incarnations`' unfinished runs, in key order (`FleetJournal.lockKeys`).
    static func lockForTakeover(_ incarnations: [String], actions: [Action]) -> [FleetJournal.Statement] {
        let hookKeys = keys(of: actions)
        return (hookKeys.isEmpty ? [] : [insertKeys(hookKeys)]) + [FleetJournal.lockKeys(ofIncarnations: incarnations, keys: hookKeys)]
    }

    /// Gives each hook key a slot row if it has none, in key order, so that `lockKeys` can lock it.
    static func insertKeys(_ keys: [String]) -> FleetJournal.Statement {
        ("INSERT INTO keys (key) SELECT k FROM unnest($1::text[]) AS k ORDER BY k ON CONFLICT DO NOTHING", [FleetJournal.textArray(keys)])
    }

    /// Decides the hooks an end fires, `previous` being its key's outcome before it, in the
    /// transaction that wrote the end (holding the hook keys' rows).
    static func fire(_ firing: HookFiring, previous: Phase?, on db: PGConnection, as me: FleetHost) throws {
        for event in firing.hooks.fired(by: firing.run.phase, previous: previous) {
            guard let target = firing.hooks.targets[event] else { continue }
            try trigger(target, cause: HookCause(run: firing.run.id, action: firing.run.action, event: event), on: db, as: me)
        }
    }

    /// One hook's trigger, from nobody, decided by the engine in one step (`KeyDecision.step`) on
    /// what its key's rows say, all read first: the key's facts and, for a replace, the facts of
    /// the runs it may stop (`KeyDecision.mayStop`); the step takes a new run's id where it makes one.
    /// It answers a queued run of this host (started by `startWaiting`, or by the host that takes
    /// it over) with the stops its replace asked, or a record against the run it joins,
    /// coalesces or debounces into, is rejected or cooled by; `perform` writes it.
    private static func trigger(_ target: HookTarget, cause: HookCause, on db: PGConnection, as me: FleetHost) throws {
        let action = target.action
        // Held already, taken with its transaction's own keys in key order: by an end's transaction
        // (`FleetWriter`), the reaper's (`lockForTakeover`), an end for needs (`FleetNeeds.keyLocks`),
        // or a trigger batch's (`awaitingKeys`). Locked here again: a no-op where held.
        try db.query("INSERT INTO keys (key) VALUES ($1) ON CONFLICT DO NOTHING", [target.key])
        let slot = KeySlot(row: try db.query("SELECT holder, follow_up, draining, line FROM keys WHERE key = $1 FOR UPDATE", [target.key]).first
            ?? [nil, nil, nil, nil])
        let asked = KeyDecision.Asked(hook: action, params: target.params)
        let facts = try facts(of: target.key, action, slot: slot, on: db)
        // What the rows it writes are stamped with: this host's clock, read once (as a batch's
        // `Rows.stamp`): a replaced run ends when its replacement is queued. Decided on `facts.now`.
        let stamp = Timestamp.now
        let mayStop = KeyDecision.mayStop(asked, slot: slot)
        let stopping = mayStop.isEmpty ? [:] : try FleetStop.facts(of: mayStop, on: db)
        // A new run's id is taken from the database only where the step makes one (it asks `id` then).
        let step = try KeyDecision.step(asked, facts, stopping: stopping, me: me.incarnation, id: { try nextRunID(for: action, on: db) }, at: stamp)
        // A need that would be refused: the hook makes no run (nor stops one), its need's refusal
        // recorded, as on one machine; decided on the needed keys' rows (held with the hook's, `locked`).
        if case .created = step.decision, !action.needs.isEmpty,
           let refusal = try KeyDecision.needRefusal(action, params: target.params, at: facts.now, facts: { key, needed in
               try neededFacts(of: key, needed, on: db)
           }) {
            if let record = refusal.record(via: KeyDecision.NeedRefusal.via(hook: action.name, cause), peer: nil, at: stamp) {
                try db.query(FleetJournal.insertTrigger(record, host: me.name))
            }
            return
        }
        try perform(step, target, cause, at: stamp, on: db, as: me)
    }

    /// A needed key's facts for a hook's need (`KeyDecision.needRefusal`): its row, held (a
    /// no-op where the caller holds it), then what `facts` reads of any hook's key.
    private static func neededFacts(of key: String, _ action: Action, on db: PGConnection) throws -> KeyFacts {
        try db.query("INSERT INTO keys (key) VALUES ($1) ON CONFLICT DO NOTHING", [key])
        let slot = KeySlot(row: try db.query("SELECT holder, follow_up, draining, line FROM keys WHERE key = $1 FOR UPDATE", [key]).first
            ?? [nil, nil, nil, nil])
        return try facts(of: key, action, slot: slot, on: db)
    }

    /// Writes what a hook's trigger was decided (`trigger`), its rows stamped `now` (the step's stamp).
    private static func perform(_ step: KeyDecision.Step, _ target: HookTarget, _ cause: HookCause, at now: Timestamp, on db: PGConnection,
                                as me: FleetHost) throws {
        let action = target.action
        let decided = step.decision
        switch decided {
        case .refused:
            return
        case .paused, .rateLimited:
            // Recorded against no run, as one machine records a hook its target's pause or rate refuses.
            if let record = decided.record { try self.record(target, cause, run: nil, record, at: now, on: db, as: me) }
        case let .debounced(run, window):
            try db.query(FleetDebounce.store(window, run: run))
            try record(target, cause, run: run, .debounced, at: now, on: db, as: me)
        case let .shared(decision):
            if let record = decided.record { try self.record(target, cause, run: decision.run, record, at: now, on: db, as: me) }
        case let .created(decision, window):
            var run = RunSnapshot(id: decision.run, action: action.name, key: target.key, phase: .queued, policy: action.policy,
                                  params: target.params, trigger: nil, queuedAt: now)
            run.via = cause.description
            run.hook = cause
            let detail = KeyDecision.queuedDetail(decision, via: cause.description, window: window)
            // Its origin is the one the firing run passes on (`FleetJournal.Origin`).
            // Its definition, stored with it, once per connection (`FleetRunDefinitions.store`).
            let revision = try FleetRunDefinitions.store(action, on: db)
            try db.query(FleetJournal.insertRun(run, as: me, definition: action.fingerprint, revision: revision, origin: .parent(cause.run)))
            if !action.needs.isEmpty { try db.query(FleetNeeds.asking(run.id)) }
            try FleetJournal.insertTransition(Transition(runID: run.id, seq: 1, from: nil, to: .queued, at: now, detail: detail), on: db)
            if let rule = action.approve {
                try db.query(FleetApprovals.insert(run.id, action: action.name, rule))
            }
            // The runs it replaces stop as any replace's do (`FleetStop`); a queued one has left the slot the step answers.
            try FleetStop.write(step.stops, on: db)
            try FleetJournal.store(step.slot, key: target.key, on: db)
            if let window { try db.query(FleetDebounce.store(window, run: run.id)) }
            // Its awaiting hook (with `on.chain`), once its key's slot is written.
            try fireAwaiting(run, action, on: db, as: me)
        }
    }

    /// What the key's rows say, read while its row is held, in one round trip: the engine's value
    /// (`KeyFacts`), of which it makes its view and decides. One clock, the database's, read once
    /// with the action's pause (`FleetPauses.clockAndPause`): every window, hold and the cooldown
    /// are decided on it, and the pause is handed as kept (the engine says whether it holds, as
    /// for a host's trigger: `KeyDecision.view`). The rate bucket, windows, line and last success
    /// are read only for an action that has them.
    private static func facts(of key: String, _ action: Action, slot: KeySlot, on db: PGConnection) throws -> KeyFacts {
        let claim = action.rateClaim(key: key)
        let lined = action.policy == .queue && action.queueDepth > 1 && !slot.line.isEmpty
        var reads = [FleetPauses.clockAndPause(action.name)]
        // Its rate limit's bucket, read without its lock (the writer holds key rows a trigger
        // batch may wait for while holding the bucket's): the start that the run then waits
        // for decides under the lock (`KeyDecision.decide`), so no window holds more starts than allowed.
        if let claim { reads.append(FleetRates.read(claim, action: action.name, key: key)) }
        if action.debounce != nil { reads.append(FleetDebounce.pending(of: key)) }
        // The line's runs: their params (a line is joined by params), phase and last seq as read.
        if lined {
            let ids = "{" + slot.line.map(String.init).joined(separator: ",") + "}"
            reads.append(("SELECT id, params, phase, last_seq FROM runs WHERE id = ANY ($1::bigint[])", [ids]))
        }
        if action.cooldown != nil { reads.append(FleetCooldown.lastSuccess(of: key)) }
        var read = try db.pipeline(reads)[...]
        guard let (now, pause) = FleetPauses.clockAndPause(read.removeFirst().first) else {
            throw PGError(message: "the database's clock could not be read for a hook's trigger of key \(key)")
        }
        var facts = KeyFacts(slot: slot, now: now, pause: pause)
        if let claim { facts.rate = FleetRates.bucket(read.removeFirst().rows).rate(claim, key: key, at: now) }
        if action.debounce != nil {
            guard let windows = FleetDebounce.reading(read.removeFirst().rows) else {
                throw PGError(message: "the debounce of key \(key) could not be read")
            }
            facts.windows = windows
        }
        if lined {
            for row in read.removeFirst().rows {
                guard let id = row[0].flatMap({ Int64($0) }), let phase = row[2].flatMap(Phase.init(rawValue:)) else { continue }
                guard let lastSeq = row[3].flatMap({ Int($0) }) else { throw PGError(message: "run \(id)'s last_seq could not be read") }
                facts.runs[id] = KeyFacts.Run(phase: phase, lastSeq: lastSeq, params: JSONText.params(row[1]))
            }
        }
        if action.cooldown != nil { facts.lastSuccess = FleetCooldown.lastSuccess(read.removeFirst().first) }
        return facts
    }

    private static func nextRunID(for action: Action, on db: PGConnection) throws -> Int64 {
        guard let id = Int64(try db.query("SELECT nextval('runs_id_seq')").first?[0] ?? "") else {
            throw PGError(message: "PostgreSQL gave no run id for the hook run of \(action.name)")
        }
        return id
    }

    private static func record(_ target: HookTarget, _ cause: HookCause, run: Int64?, _ decision: TriggerRecord.Decision, at now: Timestamp,
                               on db: PGConnection, as me: FleetHost) throws {
        let record = TriggerRecord(runID: run, action: target.action.name, key: target.key, decision: decision,
                                   policy: target.action.policy, peer: nil, at: now, params: target.params, via: cause.description)
        try db.query(FleetJournal.insertTrigger(record, host: me.name))
    }

    /// What a hook run is told of the run that fired it, rebuilt from that run's row and the
    /// output tail it kept: for the host that claims the hook run, whichever host created it.
    /// An awaiting hook is told the run as it began to wait, whatever it did since (`awaiting`).
    static func context(of run: RunSnapshot, on db: PGConnection) throws -> HookContext? {
        guard let cause = run.hook,
              let row = try db.query("SELECT \(FleetRows.runColumns) FROM runs WHERE id = $1", [String(cause.run)]).first
        else { return nil }
        if cause.event == .awaiting { return awaiting(cause, FleetRows.run(row)) }
        let tail = try db.query("SELECT encode(tail, 'hex') FROM outputs WHERE run_id = $1", [String(cause.run)]).first?[0]
        return HookContext(cause: cause, run: FleetRows.run(row), output: FleetHistory.unhex(tail ?? ""))
    }

    /// An awaiting hook's context as one machine builds it when the run begins to wait
    /// (`ConductorState.awaitApproval`): `queued`, no reason, exit or error, no output, though
    /// the run read now may have been approved and run since.
    static func awaiting(_ cause: HookCause, _ run: RunSnapshot) -> HookContext {
        var context = HookContext(cause: cause, run: run, output: [])
        context.phase = .queued
        context.reason = nil
        context.exitCode = nil
        context.error = nil
        return context
    }
}
