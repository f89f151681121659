import FoundationEssentials

/// What was wrong with a request line, in the protocol's words: the field and what it should
/// have been, never a Swift type name.
enum RequestDecoding {
    static func describe(_ error: any Error) -> String {
        switch error {
        case let DecodingError.keyNotFound(key, context):
            return "missing field \(path(context.codingPath + [key]))"
        case let DecodingError.typeMismatch(type, context):
            return "\(path(context.codingPath)): expected \(kind(type))"
        case let DecodingError.valueNotFound(type, context):
            return "\(path(context.codingPath)): expected \(kind(type)), got null"
        case let DecodingError.dataCorrupted(context):
            if context.codingPath.isEmpty { return "not a JSON object: \(context.debugDescription)" }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    /// A key written twice in one object, by its path: `param a is given twice: …` for a trigger's
    /// or a filter's params, `op is given twice: …` for any other field.
    /// A number token the JSON grammar refuses (`2e-`, `01`, `1.`).
    static func notANumber(_ token: String) -> String {
        "not a JSON object: \(token.prefix(40)) is not a number (JSON writes one as 12, -1.5 or 2e-3)"
    }

    static func givenTwice(_ path: String) -> String {
        for prefix in ["params.", "filter.params."] where path.hasPrefix(prefix) {
            let field = prefix == "params." ? "" : "filter.params: "
            return "\(field)param \(path.dropFirst(prefix.count)) is given twice: give each param once"
        }
        return "\(path) is given twice: give each field once"
    }

    /// A JSON kind for a Swift type: `a string`, `a whole number`, …
    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt32.Type: return "a whole number"
        case is Double.Type: return "a number"
        default: return String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        let text = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        return text.isEmpty ? "the request" : text
    }
}
