
extension Action {
    /// The longest name of an action or a param, in bytes (names are ASCII).
    public static let maxNameLength = 64
    /// The most params an action may declare, and so a trigger or a history filter carry.
    public static let maxParams = 100
    /// The longest param value, in bytes.
    public static let maxValueLength = 4_096
    /// The fewest bytes of a secret param's value (an empty one masks nothing): a shorter one
    /// would be masked in batond's own words too (`exited with status ***`), which would show it.
    public static let minSecretLength = 4

    /// The environment variable a param reaches the process as: `BATON_PARAM_` and its name upper-cased
    /// (as `ExecRunner` sets it), so names that differ only in case share one.
    public static func environmentName(ofParam name: String) -> String {
        "BATON_PARAM_" + name.uppercased()
    }

    /// The param names an action may declare: environment-variable safe once upper-cased.
    public static func isValidParamName(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard let first = scalars.first, scalars.count <= maxNameLength else { return false }
        let isLetter: (Unicode.Scalar) -> Bool = { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || $0 == "_" }
        return isLetter(first) && scalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
    }

    /// The trigger's params checked against the declaration, with defaults filled in.
    /// Throws `badParam` naming the param that is undeclared, missing or does not match.
    public func resolveParams(_ given: [String: String]) throws(BatonError) -> [String: String] {
        try Self.resolveParams(given, declared: params, action: name)
    }

    /// The same check for an action known only by its declaration (a client that checks params
    /// before sending them gets batond's words).
    public static func resolveParams(_ given: [String: String], declared params: [String: ParamSpec],
                                     action: String) throws(BatonError) -> [String: String] {
        var resolved: [String: String] = [:]
        for (name, value) in given {
            guard let spec = params[name] else {
                let known = params.keys.sorted()
                throw .badParam(name: name, message: known.isEmpty
                    ? "action \(action) takes no params, got \(name)"
                    : "action \(action) has no param \(name) (it takes: \(known.joined(separator: ", ")))")
            }
            guard !value.contains("\n"), !value.contains("\0"), !value.contains("\r") else {
                throw .badParam(name: name, message: "param \(name): a value may not contain a newline or NUL")
            }
            guard value.utf8.count <= maxValueLength else {
                throw .badParam(name: name, message: "param \(name): the value is longer than \(maxValueLength) bytes")
            }
            if let pattern = spec.pattern, !pattern.matches(value) {
                // A secret's value is never quoted back: the message may be logged or kept.
                let shown = spec.secret ? "the secret value" : Self.quoted(value)
                throw .badParam(name: name, message: "param \(name): \(shown) does not match \(pattern)")
            }
            if spec.secret, !value.isEmpty, value.utf8.count < minSecretLength {
                throw .badParam(name: name, message: "param \(name): a secret value must have at least \(minSecretLength) bytes "
                    + "(a shorter one would be masked in batond's own words too, which would show it)")
            }
            resolved[name] = value
        }
        for (name, spec) in params where resolved[name] == nil {
            guard let value = spec.defaultValue else {
                throw .badParam(name: name, message: "param \(name) is required by action \(action)")
            }
            resolved[name] = value
        }
        return resolved
    }

    /// The most automaton steps matching these params against their patterns can take.
    public func matchingCost(_ given: [String: String]) -> Int {
        given.reduce(0) { total, param in
            guard let pattern = params[param.key]?.pattern else { return total }
            return total + pattern.worstCaseSteps(forLength: min(param.value.utf8.count, Self.maxValueLength + 1))
        }
    }

    /// The single-flight key for resolved params: the name, plus ` name=value` of each key param,
    /// percent-escaped so that different params never make the same key (`SingleFlightKey`).
    public func key(for params: [String: String]) -> String {
        SingleFlightKey.make(action: name, keyParams: keyParams, params: params)
    }

    /// The policy for a trigger that may ask for one; throws `badRequest` when the action does not allow it.
    public func resolvePolicy(_ requested: Policy?) throws(BatonError) -> Policy {
        guard let requested, requested != policy else { return policy }
        guard policies.contains(requested) else {
            let allowed = ([policy] + policies.subtracting([policy]).sorted { $0.rawValue < $1.rawValue }).map(\.rawValue)
            throw .badRequest("action \(name) does not allow policy \(requested.rawValue) (allowed: \(allowed.joined(separator: ", ")))")
        }
        return requested
    }

    /// Whether a trigger may pass `force`: only where the action allows it (`force: true`), and
    /// only with a cooldown to get round, so that a stray `--force` says it does nothing.
    public func checkForce(_ requested: Bool?) throws(BatonError) -> Bool {
        guard requested == true else { return false }
        guard allowsForce else {
            throw .badRequest("action \(name) does not allow force (set force: true on it in the config to let triggers skip its cooldown)")
        }
        return true
    }

    /// A trigger's schedule slot: a time after 1970, in microseconds, when given.
    public static func checkSlot(_ micros: Int64?) throws(BatonError) -> Timestamp? {
        guard let micros else { return nil }
        guard micros > 0 else { throw .badRequest("slot must be a time after 1970, in microseconds, got \(micros)") }
        return Timestamp(rawValue: micros)
    }

    /// A value in double quotes for messages, cut at 80 characters.
    public static func quoted(_ value: String) -> String {
        "\"" + value.prefix(80).replacingEvery("\"", with: "\\\"") + (value.count > 80 ? "…" : "") + "\""
    }
}

