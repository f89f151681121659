import BatonCore

/// How a wait for needs ends a run that never starts.
extension FleetNeeds {
    /// The locks an end for needs takes before its key's row (`FleetPauses`' lock order): its
    /// action's pause lock, when the end counts towards `pauseAfterFailures`.
    static func endLocks(_ action: Action?) -> [FleetJournal.Statement] {
        guard let action, action.pauseAfterFailures != nil else { return [] }
        return [FleetPauses.lock(action.name).statement]
    }

    /// The locks of a transaction that may end run `id` for its needs, after `endLocks`: its
    /// key's row and, where `action` is known (the end may fire its hooks), the rows of the keys
    /// its hooks may trigger, all in key order (as `FleetHooks.lockForTakeover`), so that no
    /// hook's key is taken late, after a key that a trigger batch of the hook's action locks later.
    static func keyLocks(_ id: Int64, _ action: Action?) -> [FleetJournal.Statement] {
        let hookKeys = action.map { FleetHooks.keys(of: [$0]) } ?? []
        return endLocks(action) + (hookKeys.isEmpty ? [] : [FleetHooks.insertKeys(hookKeys)])
            + [FleetJournal.lockKeys(runs: [id], keys: hookKeys)]
    }

    /// Ends queued run `id` `failure` for its needs (`RunMachine.Stop.needs`), its key's row held,
    /// as any end a host writes of a run it did not run (`FleetTakeover`): the transition applied
    /// (its key's slot released, `keys.last_outcome`), its hooks fired (their runs are `me`'s) and,
    /// with `pauseAfterFailures`, the failure counted over every host's runs (its lock taken first,
    /// `endLocks`). `action`: the run's action as this host has it (nil: no hooks, nothing counted).
    static func end(_ id: Int64, _ message: String, on db: PGConnection, as me: FleetHost, _ action: Action?) throws {
        guard let row = try db.query("SELECT \(FleetRows.withSeq.sql) FROM runs WHERE id = $1 AND phase = 'queued'",
                                     [String(id)]).first else { return }
        let (run, seq) = FleetRows.runAndSeq(row)
        // The engine's stop of a queued run (`StopDecision`): its end, one seq after its last.
        guard case let .ends(transition) = StopDecision.decide(.needs(message), run: id, phase: .queued, lastSeq: seq, ownedHere: false, at: .now),
              let applied = try FleetJournal.applied(transition, on: db, as: nil) else {
            throw PGError(message: "run \(id) could not be ended (\(message))")
        }
        guard let action else { return }
        if let firing = HookFiring(run: run.applying(transition), hooks: action.hooks) {
            try FleetHooks.fire(firing, previous: applied.previousOutcome, on: db, as: me)
        }
        if let most = action.pauseAfterFailures {
            _ = try FleetPauses.count(run: id, action: action.name, most: most, on: db, host: me.name)
        }
    }
}
