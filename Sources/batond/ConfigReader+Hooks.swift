import BatonCore

extension ConfigReader {
    static let onFields: Set<String> = Set(HookEvent.allCases.map(\.rawValue) + ["chain"])

    /// Reads every action's `on: { failure, success, change, chain }` and resolves the names to
    /// the actions they trigger: an unknown action, an action with a required param (a hook run
    /// has no trigger to take it from) and a cycle of hooks are refused, each naming what is wrong.
    /// Targets are resolved before the actions that name them, so that a chained hook's own
    /// hooks come with it.
    mutating func hooks(_ values: [String: JSONValue], into actions: inout [Action]) {
        var names: [String: [HookEvent: String]] = [:]
        var chain: Set<String> = []
        let known = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard case let .object(fields) = value, let on = fields["on"] else { continue }
            let at = "actions.\(name).on"
            guard let hooks = object(on, at: at, allowed: Self.onFields) else { continue }
            if let flag = hooks["chain"] {
                if case let .bool(on) = flag { if on { chain.insert(name) } } else { fail("\(at).chain", "expected true or false, got \(flag.kind)") }
            }
            for event in HookEvent.allCases {
                guard let target = hooks[event.rawValue].flatMap({ string($0, at: "\(at).\(event.rawValue)") }) else { continue }
                guard let action = known[target] else {
                    let guess = Suggestion.didYouMean(target, among: known.keys.sorted()).map { "; \($0)" } ?? ""
                    fail("\(at).\(event.rawValue)", "names no configured action: \(Action.quoted(target))\(guess) (actions: \(known.keys.sorted().joined(separator: ", ")))")
                    continue
                }
                let required = action.params.filter { $0.value.defaultValue == nil }.keys.sorted()
                if !required.isEmpty {
                    fail("\(at).\(event.rawValue)", "names \(target), whose param \(required.joined(separator: ", ")) has no default: "
                        + "a hook run gets only its action's param defaults (the firing run's params are in BATON_HOOK_PARAM_*)")
                    continue
                }
                if event == .awaiting, fields["approve"] == nil {
                    fail("\(at).awaiting", "fires when a run waits for approval, and \(name) has no approve")
                    continue
                }
                names[name, default: [:]][event] = target
            }
        }
        for cycle in Self.hookCycles(names) {
            fail("actions.\(cycle[0]).on", "hooks make a cycle: \(cycle.joined(separator: " → ")) → \(cycle[0])")
        }
        guard problems.isEmpty else { return }
        var resolved: [String: Action] = [:]
        func resolve(_ name: String) -> Action {
            if let done = resolved[name] { return done }
            var action = known[name]!
            action.hooks.chain = chain.contains(name)
            for (event, target) in names[name] ?? [:] {
                let hook = resolve(target)
                action.hooks.targets[event] = HookTarget(action: hook, params: hook.params.compactMapValues(\.defaultValue))
            }
            resolved[name] = action
            return action
        }
        actions = actions.map { resolve($0.name) }
    }

    /// The cycles among the hooks, each once, from its smallest name, in name order (the one
    /// cycle finder the needs use too, `needCycles`).
    static func hookCycles(_ edges: [String: [HookEvent: String]]) -> [[String]] {
        needCycles(edges.mapValues { Array($0.values) })
    }
}
