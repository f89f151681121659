import BatonCore
import BatonHooks

extension ConfigReader {
    /// `events: ["push", "Tag Push Hook"]`, spelled as `DeliveryEvent.name` writes them;
    /// `["*"]` alone: every request (returned as nil).
    mutating func hookEvents(_ value: JSONValue, at path: String) -> Set<String>? {
        guard let texts = stringArray(value, at: path) else { return [] }
        if texts.isEmpty { fail(path, "an empty list takes no event: list some, such as [\"push\"], or [\"*\"] for every request") }
        if texts.contains(DeliveryEvent.any) {
            if texts.count > 1 { fail(path, "\"*\" takes every request: list it alone") }
            return nil
        }
        var events: Set<String> = []
        for (index, text) in texts.enumerated() {
            let event = DeliveryEvent.name(text)
            if !DeliveryEvent.isValid(event) {
                fail("\(path)[\(index)]", "\(Action.quoted(text)) is not an event name: such as \"push\", \"pull_request\" or GitLab's \"Push Hook\"")
            } else if event == DeliveryEvent.ping {
                fail("\(path)[\(index)]", "ping is always answered pong and never presses the action: leave it out")
            } else if !events.insert(event).inserted {
                fail("\(path)[\(index)]", "\(Action.quoted(text)) is listed twice (as \(event))")
            }
        }
        return events
    }

    /// `when: { "/ref": "refs/heads/main", "/repository/full_name": ["a/b", "a/c"] }`: for each
    /// JSON Pointer, the value or the values (any one) the body must have there.
    mutating func hookConditions(_ value: JSONValue, at path: String) -> [HookRules.Condition] {
        guard case let .object(fields) = value else {
            fail(path, "expected an object of JSON Pointers and values, such as { \"/ref\": \"refs/heads/main\" }, got \(value.kind)")
            return []
        }
        var conditions: [HookRules.Condition] = []
        for (text, expected) in fields.sorted(by: { $0.key < $1.key }) {
            let at = "\(path).\(text)"
            let pointer: JSONPointer
            do { pointer = try JSONPointer(text) } catch {
                fail(at, "\(error.description), such as \"/ref\" or \"/repository/full_name\"")
                continue
            }
            var values: [String] = []
            if case let .array(items) = expected {
                if items.isEmpty { fail(at, "an empty list matches nothing: give the value, or the values any one of which will do") }
                values = items.enumerated().compactMap { conditionValue($0.element, at: "\(at)[\($0.offset)]") }
                guard values.count == items.count else { continue }
            } else {
                guard let one = conditionValue(expected, at: at) else { continue }
                values = [one]
            }
            if !values.isEmpty { conditions.append(HookRules.Condition(pointer, values)) }
        }
        return conditions
    }

    /// A value a condition compares with, as a param's text: a string, a whole number, a boolean.
    private mutating func conditionValue(_ value: JSONValue, at path: String) -> String? {
        switch value {
        case let .string(text): return text
        case let .bool(flag): return flag ? "true" : "false"
        case let .number(number) where number.rounded() == number && abs(number) < 1e15: return String(Int64(number))
        case .unreadableString: return string(value, at: path)
        default:
            fail(path, "expected a string, a whole number or a boolean, got \(Self.show(value))")
            return nil
        }
    }
}
