extension ConductorState {
    // MARK: Needs decided before anything is made

    /// A need that would be refused now: the needed action, the key and params it would run
    /// with, the error the trigger of the needing run is answered, and how its refusal is recorded.
    struct NeedRefusal {
        var target: Action
        var key: String
        var params: [String: String]
        var error: BatonError
        var record: TriggerRecord.Decision?
    }

    /// The first need of a new run of `action` that would be refused (the needed action paused,
    /// over its rate limit, a param refused), or nil when every need can be triggered. Each need
    /// is decided (`KeyDecision`) on a copy of its key's slot, writing nothing; a need that would
    /// make a run is checked for that run's own needs too. A trigger refused here stops, replaces
    /// and makes nothing: a `replace` does not cancel the running run, and no need's run is made
    /// for a run that never comes.
    func needRefusal(_ action: Action, params: [String: String], at now: Timestamp, uptime: Duration?) -> NeedRefusal? {
        for need in action.needs {
            let target = need.action
            let given: [String: String]
            do { given = try need.params(for: params) } catch {
                return NeedRefusal(target: target, key: target.name, params: [:],
                                   error: .badRequest("needs \(target.name): \(error.message(at: now))"), record: nil)
            }
            let key = target.key(for: given)
            var slot = table.slot(of: key)
            let decided = KeyDecision.decide(KeyDecision.Asked(action: target, policy: .join, params: given),
                                             keyView(key, target, slot: nil, at: now, uptime: uptime), slot: &slot, candidate: { nextRunID })
            let refusal = { (error: BatonError, record: TriggerRecord.Decision?) in
                NeedRefusal(target: target, key: key, params: given, error: error, record: record)
            }
            switch decided {
            case let .refused(error):
                return refusal(.badRequest("needs \(target.name): \(error.message(at: now))"), nil)
            case let .paused(pause, _):
                return refusal(.paused(pause), decided.record ?? .paused)
            case let .rateLimited(limit, next):
                return refusal(.rateLimited(action: target.name, limit: limit, next: next), .rateLimited)
            case .created:
                if let deeper = needRefusal(target, params: given, at: now, uptime: uptime) { return deeper }
            case .debounced, .shared:
                continue
            }
        }
        return nil
    }

    /// A needing run refused before it was made: its need's refusal recorded against the needed
    /// action (`via`: what would have needed it), as a trigger of it refused so would be.
    func needRefusalRecord(_ refusal: NeedRefusal, via: String, peer: Peer?, at now: Timestamp) -> JournalEntry? {
        guard let decision = refusal.record else { return nil }
        return .trigger(TriggerRecord(runID: nil, action: refusal.target.name, key: refusal.key, decision: decision, policy: .join,
                                      peer: peer, at: now, params: refusal.params, via: via))
    }

    /// A trigger refused for its action's need: the need's refusal recorded, the trigger answered with it.
    mutating func refuseForNeed(_ refusal: NeedRefusal, _ token: Token, _ trigger: Trigger, _ step: inout Step) {
        if let entry = needRefusalRecord(refusal, via: "needed by a trigger of \(trigger.action.name)", peer: trigger.peer, at: step.now) {
            step.entries.append(entry)
        }
        step.answer(token, .failed(refusal.error))
    }
}
