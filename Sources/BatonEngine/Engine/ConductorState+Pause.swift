extension ConductorState {
    // MARK: Pause

    /// The action's pause, where it holds at `now`.
    public func pause(of action: String, at now: Timestamp) -> ActionPause? {
        pauses[action].flatMap { $0.holds(at: now) ? $0 : nil }
    }

    /// Seeds the pauses the history kept (at start); one that ended meanwhile is forgotten when asked.
    public mutating func remember(pauses list: [ActionPause]) {
        for pause in list { pauses[pause.action] = pause }
    }

    /// Pauses an action (or moves its pause's end or reason): durable before it is answered.
    mutating func pause(_ token: Token, _ pause: ActionPause, _ step: inout Step) {
        pauses[pause.action] = pause
        failureStreaks[pause.action] = nil
        step.entries.append(.pause(pause))
        step.answer(token, .paused(pause))
    }

    /// Ends an action's pause: answered with the pause it ended, nil when it was not paused.
    mutating func resume(_ token: Token, action: String, by: String, _ step: inout Step) {
        guard let pause = pauses.removeValue(forKey: action), pause.holds(at: step.now) else { return step.answer(token, .paused(nil)) }
        failureStreaks[action] = nil
        step.entries.append(.resume(action: action, by: by, at: step.now))
        step.answer(token, .paused(pause))
    }

    /// A run's end decided: a failure counts towards its action's `pauseAfterFailures`, a success
    /// starts the count again; the Nth failure in a row pauses the action, in the end's item.
    mutating func countFailures(_ run: RunSnapshot, _ action: Action, _ step: inout Step) {
        guard let most = action.pauseAfterFailures else { return }
        switch run.phase {
        case .success: failureStreaks[action.name] = nil
        case .failure:
            let streak = failureStreaks[action.name, default: 0] + 1
            failureStreaks[action.name] = streak
            guard streak >= most, pause(of: action.name, at: step.now) == nil else { return }
            let last = run.error.map { ": \($0)" } ?? ""
            let pause = ActionPause(action: action.name, by: ActionPause.afterFailures,
                                    reason: "\(streak) failures in a row (the last, run \(run.id)\(last))", at: step.now)
            pauses[action.name] = pause
            failureStreaks[action.name] = nil
            step.entries.append(.pause(pause))
        default: break
        }
    }

    /// A trigger of a paused action: recorded against no run (`paused`, or `skipped` for a
    /// schedule slot), then refused with the pause once that record is durable.
    mutating func refusePaused(_ pause: ActionPause, _ record: TriggerRecord.Decision, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        step.entries.append(.trigger(self.record(trigger, run: nil, record, at: step.now)))
        step.answer(token, .failed(.paused(pause)))
    }
}
