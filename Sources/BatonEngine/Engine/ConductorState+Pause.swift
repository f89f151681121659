extension ConductorState {
    // MARK: Pause

    /// The action's pause, where it holds at `now`.
    public func pause(of action: String, at now: Timestamp) -> ActionPause? {
        pauses[action].flatMap { $0.holds(at: now) ? $0 : nil }
    }

    /// Seeds the pauses the history kept (at start, before recovery): the runs it queues again
    /// wait while theirs holds. One that ended meanwhile holds nothing.
    public mutating func remember(pauses list: [ActionPause]) {
        for pause in list {
            pauses[pause.action] = pause
            table.hold(action: pause.action)
        }
    }

    /// Seeds an action's failures in a row (`pauseAfterFailures`) from the history, so that a
    /// restart does not start the count again: `runs` are its latest successes and failures, newest
    /// first; `since`, its last pause or resume, which started the count again. Seeded before
    /// recovery: a run it ends (`interrupted`) counts on from it through `FailureStreak.end`, so the
    /// Nth failure in a row pauses at the restart. A streak already at `most` here makes no pause
    /// (a pause or resume would have started it again: `most` was lowered since); the next failure does.
    public mutating func remember(failuresOf action: Action, runs: [RunSnapshot], since: Timestamp?) {
        guard action.pauseAfterFailures != nil else { return }
        let streak = Self.failureStreak(runs, since: since)
        failureStreaks[action.name] = streak == 0 ? nil : streak
    }

    /// An action's failures in a row: `runs` are its latest successes and failures, newest first;
    /// `since`, its last pause or resume, which starts the count again. (A fleet counts from its
    /// rows with it, in the transaction that writes an end.)
    public static func failureStreak(_ runs: [RunSnapshot], since: Timestamp?) -> Int {
        var streak = 0
        for run in runs {
            guard run.phase == .failure, since.map({ (run.endedAt ?? run.queuedAt) > $0 }) ?? true else { break }
            streak += 1
        }
        return streak
    }

    /// Holds the runs of a paused action that have not started (`FlightTable.hold`); with an end,
    /// each gets a timer that lets it go then (`pauseMayHaveEnded`).
    mutating func hold(_ pause: ActionPause, _ step: inout Step) {
        table.hold(action: pause.action)
        guard let until = pause.until else { return }
        for flight in flights.values where flight.action.name == pause.action && flight.machine.phase == .queued {
            step.emit(.schedule(run: flight.run.id, .pauseEnd, after: max(until - step.now, .zero)))
        }
    }

    /// A run's `.pauseEnd` timer went off: its action's runs go if no pause holds now, else the
    /// timer waits again for the end of the pause that does (none: until a resume).
    mutating func pauseTimerFired(_ id: Int64, _ action: String, _ step: inout Step) {
        if let pause = pause(of: action, at: step.now) {
            if let until = pause.until { step.emit(.schedule(run: id, .pauseEnd, after: max(until - step.now, .zero))) }
            return
        }
        pauseMayHaveEnded(action, &step)
    }

    /// A new run `id` of `action` is made while a held pause with an end holds it (`--hold --for`):
    /// its timer lets it go then, as `hold(_:_:)` gives each run waiting when the pause began.
    mutating func timePause(_ id: Int64, _ action: String, _ step: inout Step) {
        guard let until = pause(of: action, at: step.now)?.until else { return }
        step.emit(.schedule(run: id, .pauseEnd, after: max(until - step.now, .zero)))
    }

    /// A new run of `action` is made: a timed pause that ran out with no run waiting (so no timer
    /// to notice) holds it no longer.
    mutating func releaseIfOver(_ action: String, at now: Timestamp) {
        if table.held.contains(action), pause(of: action, at: now) == nil { table.release(action: action) }
    }

    /// A pause's time ran out, or the action resumed: its runs go once no pause holds.
    mutating func pauseMayHaveEnded(_ action: String, _ step: inout Step) {
        guard pause(of: action, at: step.now) == nil, table.held.contains(action) else { return }
        table.release(action: action)
        admit(&step)
    }

    /// Pauses an action (or moves its pause's end or reason): durable before it is answered.
    mutating func pause(_ token: Token, _ pause: ActionPause, _ step: inout Step) {
        pauses[pause.action] = pause
        // Until it is durable, no read of the fleet's pauses knows of it: each is older news.
        pauseChanged[pause.action] = Timestamp(rawValue: .max)
        step.after.append(.pauseDurable(pause.action))
        failureStreaks[pause.action] = nil
        step.entries.append(.pause(pause))
        step.answer(token, .paused(pause))
        if pause.holds(at: step.now) { hold(pause, &step) } else { pauseMayHaveEnded(pause.action, &step) }
    }

    /// Ends an action's pause: answered with the pause it ended, nil when it was not paused.
    mutating func resume(_ token: Token, action: String, by: String, _ step: inout Step) {
        pauseChanged[action] = Timestamp(rawValue: .max)
        step.after.append(.pauseDurable(action))
        guard let pause = pauses.removeValue(forKey: action), pause.holds(at: step.now) else {
            pauseMayHaveEnded(action, &step)
            return step.answer(token, .paused(nil))
        }
        failureStreaks[action] = nil
        step.entries.append(.resume(action: action, by: by, at: step.now))
        step.answer(token, .paused(pause))
        pauseMayHaveEnded(action, &step)
    }

    /// A run's end decided: a failure counts towards its action's `pauseAfterFailures`, a success
    /// starts the count again; the Nth failure in a row pauses the action, in the end's item. The
    /// rule is `FailureStreak.end`, on this host's count and pause (a fleet's store asks it on its rows).
    mutating func countFailures(_ run: RunSnapshot, _ action: Action, _ step: inout Step) {
        guard let most = action.pauseAfterFailures else { return }
        if storeCountsFailures {
            if run.phase == .failure || run.phase == .success {
                step.entries.append(.failureStreak(run: run.id, action: action.name, most: most))
            }
            return
        }
        guard let ended = FailureStreak.end(run, most: most, failures: failureStreaks[action.name, default: 0], pause: pauses[action.name],
                                            at: step.now) else { return }
        failureStreaks[action.name] = ended.failures == 0 ? nil : ended.failures
        guard let pause = ended.pause else { return }
        pauses[action.name] = pause
        step.entries.append(.pause(pause))
        hold(pause, &step)
    }

    /// The fleet's pauses as its database holds them now (`pausesSeen`): each action's pause
    /// becomes the one read (a pause made or changed on another host holds its runs here too), and
    /// an action no longer in the list is resumed here, its runs let go. Nothing is written. A
    /// read begun before an older one's, or before this conductor's change of an action's pause
    /// was durable (`pauseDurable`; while it is written, any read), says nothing of it: a refresh
    /// never undoes a pause or resume made here a moment ago.
    mutating func seen(pauses list: [ActionPause], readAt: Timestamp, _ step: inout Step) {
        guard pausesRead.map({ readAt >= $0 }) ?? true else { return }
        pausesRead = readAt
        let changed = pauseChanged
        let stale = { (action: String) in changed[action].map { $0 >= readAt } ?? false }
        let read = Dictionary(list.map { ($0.action, $0) }, uniquingKeysWith: { _, last in last })
        for (action, pause) in read where pauses[action] != pause && !stale(action) {
            pauses[action] = pause
            if pause.holds(at: step.now) { hold(pause, &step) } else { pauseMayHaveEnded(action, &step) }
        }
        for action in pauses.keys where read[action] == nil && !stale(action) {
            pauses[action] = nil
            pauseMayHaveEnded(action, &step)
        }
    }

    /// A trigger of a paused action: recorded against no run (`paused`, or `skipped` for a
    /// schedule slot), then refused with the pause once that record is durable.
    mutating func refusePaused(_ pause: ActionPause, _ record: TriggerRecord.Decision, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        step.entries.append(.trigger(self.record(trigger, run: nil, record, at: step.now)))
        step.answer(token, .failed(.paused(pause)))
    }
}
