extension ConductorState {
    // MARK: Debounce

    /// A debounced trigger joins its key's pending run: its window is pushed back (as
    /// `KeyDecision` decided), the trigger is recorded against it as `debounced` and answered as a
    /// join once that record is durable. The caller then hears the run's end like any sharer.
    mutating func joinPending(_ id: Int64, _ window: DebounceWindow, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        guard let flight = flights[id] else { return }
        push(id, to: window, &step)
        step.entries.append(.trigger(record(trigger, run: id, .debounced, at: step.now)))
        recordDelivery(of: trigger, run: id, &step)
        step.after.append(.ticket(token, .joined(id), fallback: flight.snapshot))
    }

    /// A further trigger of a pending run's key came: its window is now `window` (a hook's
    /// trigger too, recorded by the hook), and the run is held until its new deadline.
    mutating func push(_ id: Int64, to window: DebounceWindow, _ step: inout Step) {
        guard var flight = flights[id], flight.debounce != nil else { return }
        flight.debounce = window
        flights[id] = flight
        if window.isOpen(at: step.now) { hold(id, window, &step) }
    }

    /// Holds a run back until its window ends: gated in the table (out of the line and the lock
    /// waiters), its timer set for the deadline.
    mutating func hold(_ id: Int64, _ window: DebounceWindow, _ step: inout Step) {
        table.gate(id)
        step.emit(.schedule(run: id, .debounce, after: window.deadline - step.now))
    }

    /// The window's timer went off: the run may start once its key, a slot and its locks are
    /// free, as any run. A timer that comes early (set before a trigger pushed the window back)
    /// is set again for the deadline: no run starts inside its window.
    mutating func windowEnded(_ id: Int64, _ step: inout Step) {
        guard let flight = flights[id], let window = flight.debounce, flight.machine.phase == .queued,
              table.isGated(id) else { return }
        if window.isOpen(at: step.now) {
            return step.emit(.schedule(run: id, .debounce, after: window.deadline - step.now))
        }
        table.open(id)
        admit(&step)
    }

    /// A run as told while its window is open: with the time it is due to start.
    func addDebounce(to run: inout RunSnapshot) {
        guard run.phase == .queued, table.isGated(run.id), let window = flights[run.id]?.debounce else { return }
        run.debounceUntil = window.deadline
    }
}

extension ConductorState {
    /// A queued run with its place in its key's line (`RunSnapshot.line`), when it waits in one.
    func addLine(to run: inout RunSnapshot) {
        guard run.phase == .queued, let index = table.line(of: run.key).firstIndex(of: run.id) else { return }
        run.line = index + 1
    }
}
