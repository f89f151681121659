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
        if step.now < until { return step.emit(.schedule(run: id, .rateLimit, after: until - step.now)) }
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

    /// Each bucket of `action`'s rate limit with starts inside its window at `now`: its key (the
    /// action's name for `scope: action`), the runs it may still start, and when its oldest start
    /// leaves the window. Empty for an action without a limit, or with no recent start.
    public func rateUse(_ action: Action, at now: Timestamp) -> [(key: String, left: Int, frees: Timestamp?)] {
        guard let limit = action.rateLimit else { return [] }
        let keys: [String] = limit.scope == .action ? [action.name] : table.rates.starts.keys.compactMap { bucket in
            guard bucket.hasPrefix("key ") else { return nil }
            let key = String(bucket.dropFirst(4))
            return key == action.name || key.hasPrefix(action.name + " ") ? key : nil
        }
        return keys.sorted().compactMap { key in
            guard let use = rateLeft(action, key: key, at: now), use.frees != nil else { return nil }
            return (key, use.left, use.frees)
        }
    }

    /// A queued run as told while its rate limit holds it back: with the time it may start.
    func addRate(to run: inout RunSnapshot) {
        guard run.phase == .queued, let until = table.rateUntil(of: run.id) else { return }
        run.rateUntil = until
    }
}
