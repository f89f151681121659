extension ConductorState {
    // MARK: Rate limits

    /// Seeds the starts the history kept (at start, before recovery): a restart keeps every
    /// window of the actions' rate limits. `actions` gives each run's limit as configured now.
    public mutating func remember(starts runs: [RunSnapshot], actions: [String: Action]) {
        for run in runs {
            guard let started = run.startedAt, let claim = actions[run.action]?.rateClaim(key: run.key) else { continue }
            table.rememberStart(claim, at: started)
        }
    }

    /// A trigger that would start a run over its action's rate limit (`over: reject`): recorded
    /// against no run (`rate limited`), then refused with the limit and when a run may start.
    mutating func refuseRateLimited(_ limit: RateLimit, _ next: Timestamp, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        step.entries.append(.trigger(record(trigger, run: nil, .rateLimited, at: step.now)))
        step.answer(token, .failed(.rateLimited(action: trigger.action.name, limit: limit, next: next)))
    }

    /// A run held back by its rate limit: its `.rateLimit` timer went off. It may start once its
    /// key, a slot and its locks are free, as any run, and its limit is asked again then (another
    /// run of its bucket may have taken the start meanwhile). A timer that comes early waits again.
    mutating func rateTimerFired(_ id: Int64, _ step: inout Step) {
        guard flights[id]?.machine.phase == .queued, let until = table.rateUntil(of: id) else { return }
        if step.now < until { return step.effects.append(.schedule(run: id, .rateLimit, after: until - step.now)) }
        table.rateOpen(id, at: step.now)
        admit(&step)
    }

    /// How many runs of `action`'s key `key` may start now under its rate limit, and when the
    /// oldest start counted leaves the window; nil for an action without one. For `status`.
    public func rateLeft(_ action: Action, key: String, at now: Timestamp) -> (left: Int, frees: Timestamp?)? {
        guard let claim = action.rateClaim(key: key) else { return nil }
        let recent = table.rates.recent(claim, at: now)
        return (max(claim.limit.runs - recent.count, 0), recent.first.map { $0 + claim.limit.per })
    }

    /// A queued run as told while its rate limit holds it back: with the time it may start.
    func withRate(_ run: RunSnapshot) -> RunSnapshot {
        guard run.phase == .queued, let until = table.rateUntil(of: run.id) else { return run }
        var told = run
        told.rateUntil = until
        return told
    }
}
