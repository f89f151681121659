/// A new run's needs decided before it is made, for a host's triggers and hooks and a fleet's
/// batches and hooks alike: a trigger whose run needs an action that would refuse its own
/// trigger now (paused, over its rate limit, a param refused) is refused, and nothing is stopped
/// or made. Each store hands the facts of the needed keys its own way (a host from its flights,
/// the fleet from the rows it holds locked); the rule is here only.
extension KeyDecision {
    /// A need that would be refused now: the needed action, the key and params it would run
    /// with, the error the trigger of the needing run is answered, and how its refusal is
    /// recorded against the needed action (nil: not recorded, a param refused).
    public struct NeedRefusal: Sendable, Equatable {
        public var target: String
        public var key: String
        public var params: [String: String]
        public var error: BatonError
        public var record: TriggerRecord.Decision?

        public init(target: String, key: String, params: [String: String], error: BatonError, record: TriggerRecord.Decision?) {
            self.target = target
            self.key = key
            self.params = params
            self.error = error
            self.record = record
        }

        /// The refusal as the history records it: a trigger of the needed action under `join`,
        /// refused so, against no run, `via` what would have needed it; nil where not recorded.
        public func record(via: String, peer: Peer?, at now: Timestamp) -> TriggerRecord? {
            guard let record else { return nil }
            return TriggerRecord(runID: nil, action: target, key: key, decision: record, policy: .join, peer: peer, at: now, params: params, via: via)
        }

        /// What a trigger's need refusal is recorded `via`.
        public static func via(triggerOf action: String) -> String { "needed by a trigger of \(action)" }

        /// What a hook's need refusal is recorded `via`.
        public static func via(hook action: String, _ cause: HookCause) -> String { "needed by \(action), \(cause.description)" }
    }

    /// The first need of a new run of `action` with `params` that would be refused, or nil when
    /// every need can be triggered. Each need is decided under `join` (`decide`) on its key's
    /// facts (`facts`: the key and its action; a fleet's may throw), writing nothing; a need
    /// that would make a run is checked for that run's own needs too. `now`: the clock the
    /// messages are told on; `fingerprint`: an action's, where the facts name definitions.
    public static func needRefusal(_ action: Action, params: [String: String], at now: Timestamp,
                                   facts: (String, Action) throws -> KeyFacts,
                                   fingerprint: (Action) -> String = { $0.fingerprint }) rethrows -> NeedRefusal? {
        for need in action.needs {
            let target = need.action
            let given: [String: String]
            do { given = try need.params(for: params) } catch {
                return NeedRefusal(target: target.name, key: target.name, params: [:],
                                   error: .badRequest("needs \(target.name): \(error.message(at: now))"), record: nil)
            }
            let key = target.key(for: given)
            let known = try facts(key, target)
            var slot = known.slot
            // Nothing is made: the id a new run would take is never used.
            let decided = decide(Asked(action: target, policy: .join, params: given), known, slot: &slot, candidate: { 0 },
                                 fingerprint: { fingerprint(target) })
            let refusal = { (error: BatonError, record: TriggerRecord.Decision?) in
                NeedRefusal(target: target.name, key: key, params: given, error: error, record: record)
            }
            switch decided {
            case let .refused(error):
                return refusal(.badRequest("needs \(target.name): \(error.message(at: now))"), nil)
            case let .paused(pause, _):
                return refusal(.paused(pause), decided.record ?? .paused)
            case let .rateLimited(limit, next):
                return refusal(.rateLimited(action: target.name, limit: limit, next: next), .rateLimited)
            case .created:
                if let deeper = try needRefusal(target, params: given, at: now, facts: facts, fingerprint: fingerprint) { return deeper }
            case .debounced, .shared:
                continue
            }
        }
        return nil
    }

    /// The needed actions and keys whose facts `needRefusal` may read for a new run of `action`
    /// with `params` (its needs, theirs, and so on), each once, in the order it reads them; a
    /// need whose params are refused ends its branch (the rule reads nothing for it).
    public static func needed(by action: Action, params: [String: String]) -> [(action: Action, key: String)] {
        guard !action.needs.isEmpty else { return [] }
        var found: [(action: Action, key: String)] = []
        var seen: Set<String> = []
        func walk(_ action: Action, _ params: [String: String]) {
            for need in action.needs {
                guard let given = try? need.params(for: params) else { continue }
                let key = need.action.key(for: given)
                let asked = [need.action.name, key] + given.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                guard seen.insert(asked.joined(separator: "\u{0}")).inserted else { continue }
                if !found.contains(where: { $0.action.name == need.action.name && $0.key == key }) { found.append((need.action, key)) }
                walk(need.action, given)
            }
        }
        walk(action, params)
        return found
    }
}
