import BatonCore

/// An action's `params`: names, patterns, defaults and secrets; names that would share one
/// environment variable are refused.
extension ConfigReader {
    mutating func params(_ value: JSONValue, at: String) -> [String: ParamSpec] {
        guard case let .object(fields) = value else {
            fail(at, "expected an object of params by name, got \(value.kind)")
            return [:]
        }
        if fields.count > Action.maxParams {
            fail(at, "declares \(fields.count) params; at most \(Action.maxParams) (as many as a trigger may pass)")
        }
        var params: [String: ParamSpec] = [:]
        for (name, spec) in fields.sorted(by: { $0.key < $1.key }) {
            let here = "\(at).\(name)"
            if !Action.isValidParamName(name) {
                fail(here, "a param name is letters, digits and '_', starting with a letter or '_'")
                continue
            }
            guard let specFields = object(spec, at: here, allowed: ["pattern", "default", "secret"]) else { continue }
            var param = ParamSpec()
            if let source = specFields["pattern"].flatMap({ string($0, at: "\(here).pattern") }) {
                param.pattern = pattern(source, at: "\(here).pattern")
            }
            param.defaultValue = specFields["default"].flatMap { string($0, at: "\(here).default") }
            if let value = specFields["secret"] { param.secret = secretFlag(value, hasDefault: param.defaultValue != nil, at: here) }
            if let value = param.defaultValue, let pattern = param.pattern, !pattern.matches(value) {
                fail("\(here).default", "\(Action.quoted(value)) does not match the param's own pattern \(pattern)")
            }
            params[name] = param
        }
        sharedVariables(Array(params.keys), at: at)
        return params
    }

    /// Names that reach the process as one variable (`x` and `X` are both BATON_PARAM_X): the
    /// environment would hold one of the values, checked against the other's pattern or none.
    mutating func sharedVariables(_ names: [String], at: String) {
        let groups = Dictionary(grouping: names.sorted(), by: Action.environmentName(ofParam:))
        for (variable, group) in groups.sorted(by: { $0.key < $1.key }) where group.count > 1 {
            let listed = group.dropLast().joined(separator: ", ") + " and " + group.last!
            fail(at, "\(listed) are \(group.count == 2 ? "both" : "all") \(variable) in the process's environment: "
                + (group.count == 2 ? "rename one" : "rename all but one"))
        }
    }

    /// A param pattern compiled; a warning for nested quantifiers, which are safe here but a
    /// trap if the same pattern is used with a backtracking engine.
    mutating func pattern(_ source: String, at path: String) -> ParamPattern? {
        do {
            let pattern = try ParamPattern(source)
            if pattern.hasNestedQuantifier {
                warn(path, "\(Action.quoted(source)) repeats a repetition (nested quantifiers): batond matches it in "
                    + "linear time, but a backtracking engine (grep -P, most languages) can take exponential time on it")
            }
            return pattern
        } catch {
            fail(path, "not a valid pattern: \(error.description): \(Action.quoted(source))")
            return nil
        }
    }
}
