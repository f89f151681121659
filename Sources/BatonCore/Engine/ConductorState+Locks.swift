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

    /// A run as callers see it while it is in flight: with the lock it waits for, if any.
    func live(_ flight: Flight) -> RunSnapshot {
        var run = flight.snapshot
        if run.phase == .queued { run.waiting = lockWait(of: run.id) }
        return run
    }
}
