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
    func withLockWait(_ update: RunUpdate) -> RunUpdate {
        let run = update.run
        guard run.phase == .queued, update.transition?.to == .queued, table.holder(of: run.key) == run.id,
              table.stage(of: run.id) != .running, !table.isGated(run.id) else { return update }
        var told = update
        told.run.waiting = table.locks.wait(of: run.id)
        return told
    }

    /// A run as callers see it while it is in flight: with the lock it waits for, if any.
    func live(_ flight: Flight) -> RunSnapshot {
        var run = flight.snapshot
        if run.phase == .queued { run.waiting = lockWait(of: run.id) }
        return withNeeds(withLine(withRate(withDebounce(run))))
    }
}
