import BatonCore

extension ConfigReader {
    /// One need as written: the action's name and its params (literals or `{param}` templates).
    struct NeedSpec {
        var action: String
        var params: [String: String]
        var at: String
    }

    /// Reads every action's `needs: ["build-a", { action: "build-b", params: { ref: "{ref}" } }]`
    /// and resolves the names to the actions they trigger. Refused, each naming what is wrong: an
    /// unknown action, a param the needed action does not declare or that is not one of its
    /// `keyParams` (a need joins by key: another value would share the run), a required param of it not
    /// given, a `{name}` that is not a param of the needing action, a literal its pattern refuses,
    /// a needed action with a secret param (the needing run keeps `***`, never the value), and a
    /// cycle (a → b → a, and longer), named as its chain. Needed actions are resolved before the
    /// actions that name them, so that a needed run's own needs come with it.
    mutating func needs(_ values: [String: JSONValue], into actions: inout [Action]) {
        let known = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var specs: [String: [NeedSpec]] = [:]
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard case let .object(fields) = value, let needs = fields["needs"], let needing = known[name] else { continue }
            guard case let .array(items) = needs else {
                fail("actions.\(name).needs", "expected an array of action names or { action, params }, got \(needs.kind)")
                continue
            }
            for (index, item) in items.enumerated() {
                if let spec = needSpec(item, at: "actions.\(name).needs[\(index)]"), check(spec, of: needing, known: known) {
                    specs[name, default: []].append(spec)
                }
            }
        }
        for cycle in Self.needCycles(specs.mapValues { $0.map(\.action) }) {
            fail("actions.\(cycle[0]).needs", "needs make a cycle: \(cycle.joined(separator: " → ")) → \(cycle[0])")
        }
        guard problems.isEmpty else { return }
        var resolved: [String: Action] = [:]
        func resolve(_ name: String) -> Action {
            if let done = resolved[name] { return done }
            var action = known[name]!
            action.needs = (specs[name] ?? []).map { NeedTarget(action: resolve($0.action), params: $0.params) }
            resolved[name] = action
            return action
        }
        actions = actions.map { resolve($0.name) }
    }

    private mutating func needSpec(_ item: JSONValue, at: String) -> NeedSpec? {
        if case let .string(name) = item { return NeedSpec(action: name, params: [:], at: at) }
        guard let fields = object(item, at: at, allowed: ["action", "params"]) else { return nil }
        guard let name = fields["action"].flatMap({ string($0, at: "\(at).action") }) else {
            if fields["action"] == nil { fail("\(at).action", "missing: the name of the action needed") }
            return nil
        }
        let params = fields["params"].flatMap { stringMap($0, at: "\(at).params") } ?? [:]
        return NeedSpec(action: name, params: params, at: at)
    }

    /// Whether `spec` names a configured action and params it takes, from params `needing` has.
    private mutating func check(_ spec: NeedSpec, of needing: Action, known: [String: Action]) -> Bool {
        guard let target = known[spec.action] else {
            let guess = Suggestion.didYouMean(spec.action, among: known.keys.sorted()).map { "; \($0)" } ?? ""
            fail(spec.at, "names no configured action: \(Action.quoted(spec.action))\(guess)")
            return false
        }
        var good = true
        if let secret = target.secretParams.first {
            fail(spec.at, "names \(target.name), whose param \(secret) is secret: a needing run keeps *** for a secret, never its value")
            return false
        }
        for (name, template) in spec.params.sorted(by: { $0.key < $1.key }) {
            guard target.params[name] != nil else {
                let takes = target.params.keys.sorted()
                fail("\(spec.at).params.\(name)", "\(target.name) has no param \(name)"
                    + (takes.isEmpty ? " (it takes none)" : " (it takes: \(takes.joined(separator: ", ")))"))
                good = false
                continue
            }
            // A need joins the target's run of the same key, whatever its other params: a param
            // that is not part of that key would let a run with another value serve this one.
            guard target.keyParams.contains(name) else {
                fail("\(spec.at).params.\(name)", "\(name) is not one of \(target.name)'s keyParams"
                    + (target.keyParams.isEmpty ? " (it has none)" : " (\(target.keyParams.joined(separator: ", ")))")
                    + ": a need joins \(target.name)'s run of the same key whatever its other params, so a run with another "
                    + "\(name) would serve \(needing.name); add \(name) to \(target.name)'s keyParams")
                good = false
                continue
            }
            let references = NeedTarget.references(in: template)
            for reference in references where needing.params[reference]?.secret == true {
                fail("\(spec.at).params.\(name)", "{\(reference)} is a secret param of \(needing.name): its run keeps ***, never the value")
                good = false
            }
            for reference in references where needing.params[reference] == nil {
                let takes = needing.params.keys.sorted()
                fail("\(spec.at).params.\(name)", "{\(reference)} is not a param of \(needing.name)"
                    + (takes.isEmpty ? " (it takes none)" : " (it takes: \(takes.joined(separator: ", ")))"))
                good = false
            }
            if references.isEmpty, let pattern = target.params[name]?.pattern, !pattern.matches(template) {
                fail("\(spec.at).params.\(name)", "\(Action.quoted(template)) does not match \(target.name)'s pattern \(pattern)")
                good = false
            }
        }
        let missing = target.params.filter { $0.value.defaultValue == nil && spec.params[$0.key] == nil }.keys.sorted()
        if !missing.isEmpty {
            fail(spec.at, "names \(target.name), whose param \(missing.joined(separator: ", ")) has no default: give it in params, "
                + "such as { action: \"\(target.name)\", params: { \(missing[0]): \"{\(missing[0])}\" } }")
            good = false
        }
        return good
    }

    /// The cycles of a graph of actions (the needs', the hooks'), each once, from its smallest
    /// name, in name order.
    static func needCycles(_ edges: [String: [String]]) -> [[String]] {
        var cycles: [[String]] = []
        var seen: Set<[String]> = []
        func walk(_ path: [String]) {
            for target in Set(edges[path.last!] ?? []).sorted() {
                if let start = path.firstIndex(of: target) {
                    var cycle = Array(path[start...])
                    let smallest = cycle.indices.min { cycle[$0] < cycle[$1] }!
                    cycle = Array(cycle[smallest...] + cycle[..<smallest])
                    if seen.insert(cycle).inserted { cycles.append(cycle) }
                } else {
                    walk(path + [target])
                }
            }
        }
        for name in edges.keys.sorted() { walk([name]) }
        return cycles.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// After the hooks are resolved (which resolve with the needs): each need's action again, as
    /// it is now, so that a needed run fires its own hooks. (A needed run's needs' hooks are those
    /// resolved before: one level.)
    static func relinkNeeds(_ actions: inout [Action]) {
        let byName = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for index in actions.indices where !actions[index].needs.isEmpty {
            actions[index].needs = actions[index].needs.map { NeedTarget(action: byName[$0.action.name] ?? $0.action, params: $0.params) }
        }
    }
}
