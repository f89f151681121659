extension ConductorState {
    // MARK: Debounce

    /// The run a debounced trigger shares: its key's run that has not started yet (the holder,
    /// in its window or waiting for a slot or a lock, or the follow-up behind a running run),
    /// when that run debounces too. Nil when the trigger's action does not debounce, or its key
    /// has no such run: then the trigger is decided as any other (cooldown, then the policy).
    func pendingRun(for trigger: Trigger) -> Int64? {
        trigger.action.debounce == nil ? nil : pendingRun(of: trigger.key)
    }

    /// The run of `key` not yet started that debounces, if any.
    func pendingRun(of key: String) -> Int64? {
        KeySlot(holder: table.holder(of: key), followUp: table.followUp(of: key)).pendingRun { id in
            guard let flight = flights[id] else { return false }
            return flight.debounce != nil && flight.machine.phase == .queued && !table.isDraining(id)
        }
    }

    /// A debounced trigger joins its key's pending run: its window starts again (as far as
    /// `maxWait` allows), the trigger is recorded against it as `debounced` and answered as a
    /// join once that record is durable. The caller then hears the run's end like any sharer.
    mutating func joinPending(_ id: Int64, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        guard let flight = flights[id] else { return }
        restartWindow(of: id, &step)
        step.entries.append(.trigger(record(trigger, run: id, .debounced, at: step.now)))
        recordDelivery(of: trigger, run: id, &step)
        step.after.append(.ticket(token, .joined(id), fallback: flight.snapshot))
    }

    /// A further trigger of a pending run's key came: its window starts again, as far as
    /// `maxWait` allows (a hook's trigger too, recorded by the hook).
    mutating func restartWindow(of id: Int64, _ step: inout Step) {
        guard var flight = flights[id], var window = flight.debounce else { return }
        window.restart(at: step.now)
        flight.debounce = window
        flights[id] = flight
        if window.isOpen(at: step.now) { hold(id, window, &step) }
    }

    /// Holds a run back until its window ends: gated in the table (out of the line and the lock
    /// waiters), its timer set for the deadline.
    mutating func hold(_ id: Int64, _ window: DebounceWindow, _ step: inout Step) {
        table.gate(id)
        step.effects.append(.schedule(run: id, .debounce, after: window.deadline - step.now))
    }

    /// The window's timer went off: the run may start once its key, a slot and its locks are
    /// free, as any run. A timer that comes early (set before a trigger pushed the window back)
    /// is set again for the deadline: no run starts inside its window.
    mutating func windowEnded(_ id: Int64, _ step: inout Step) {
        guard let flight = flights[id], let window = flight.debounce, flight.machine.phase == .queued,
              table.isGated(id) else { return }
        if window.isOpen(at: step.now) {
            return step.effects.append(.schedule(run: id, .debounce, after: window.deadline - step.now))
        }
        table.open(id)
        admit(&step)
    }

    /// A run as told while its window is open: with the time it is due to start.
    func withDebounce(_ run: RunSnapshot) -> RunSnapshot {
        guard run.phase == .queued, table.isGated(run.id), let window = flights[run.id]?.debounce else { return run }
        var told = run
        told.debounceUntil = window.deadline
        return told
    }
}
