extension ConductorState {
    // MARK: Locks between actions

    /// What a queued run waits for: a lock it claims that is not free (its key free and its
    /// creation durable, so that nothing else holds it back); nil otherwise.
    public func lockWait(of run: Int64) -> LockWait? {
        guard table.stage(of: run) == .ready else { return nil }
        return table.locks.wait(of: run)
    }

    /// Every lock held now, with the runs holding it, oldest first.
    public var locksHeld: [String: [Int64]] { table.locks.held }

    /// A committed `queued` transition of a run that holds its key, told with the lock it waits
    /// for, if one is not free: its watchers learn it with the transition (the run is made ready
    /// just after, in the same step, and waits then). Later changes of the holders are not told.
    func addLockWait(to update: inout RunUpdate) {
        guard update.run.phase == .queued, update.transition?.to == .queued, table.holder(of: update.run.key) == update.run.id,
              table.stage(of: update.run.id) != .running, !table.isGated(update.run.id) else { return }
        if case let wait = table.locks.wait(of: update.run.id), wait != update.run.waiting { update.run.waiting = wait }
    }

    /// A run in flight, with its latest progress (and the lock it waits for, if any).
    public func snapshot(of run: Int64) -> RunSnapshot? {
        // Read field by field: the flight is not copied whole for it (issue 39).
        guard let seq = flights[run]?.seq, let recorded = flights[run]?.run else { return nil }
        return live(recorded, seq: seq)
    }

    /// Whether the run is in flight (its end not yet durable).
    public func isInFlight(_ run: Int64) -> Bool { flights.index(forKey: run) != nil }

    /// A run as callers see it while it is in flight: with the lock it waits for, if any.
    func live(_ flight: Flight) -> RunSnapshot { live(flight.run, seq: flight.seq) }

    /// The run recorded at `seq`, as callers see it while it is in flight.
    func live(_ recorded: RunSnapshot, seq: Int) -> RunSnapshot {
        // Set only what differs: the recorded snapshot's fields are shared until one is set
        // (a change makes a new storage), and an answer and a follower told the same snapshot
        // share its rendering (issue 39).
        var run = recorded
        if run.seq != seq { run.seq = seq }
        if run.phase == .queued, case let wait = lockWait(of: run.id), wait != run.waiting { run.waiting = wait }
        addLive(to: &run)
        return run
    }

    /// What a queued run waits for, as callers see it (nothing for a run past `queued`), in place.
    func addLive(to run: inout RunSnapshot) {
        guard run.phase == .queued else { return }
        addDebounce(to: &run)
        addRate(to: &run)
        addLine(to: &run)
        addNeeds(to: &run)
    }
}
