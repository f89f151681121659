extension ConductorState {
    // MARK: Needs decided before anything is made

    /// The first need of a new run of `action` that would be refused (the needed action paused,
    /// over its rate limit, a param refused), or nil when every need can be triggered: the
    /// engine's rule (`KeyDecision.needRefusal`) on each needed key's facts as this host's
    /// flights give them (`keyFacts`). A trigger refused here stops, replaces and makes nothing:
    /// a `replace` does not cancel the running run, and no need's run is made for a run that never comes.
    func needRefusal(_ action: Action, params: [String: String], at now: Timestamp, uptime: Duration?) -> KeyDecision.NeedRefusal? {
        KeyDecision.needRefusal(action, params: params, at: now) { key, target in keyFacts(key, target, slot: nil, at: now, uptime: uptime) }
    }

    /// A trigger refused for its action's need: the need's refusal recorded, the trigger answered with it.
    mutating func refuseForNeed(_ refusal: KeyDecision.NeedRefusal, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        if let record = refusal.record(via: KeyDecision.NeedRefusal.via(triggerOf: trigger.action.name), peer: trigger.peer, at: step.now) {
            step.entries.append(.trigger(record))
        }
        step.answer(token, .failed(refusal.error))
    }
}
