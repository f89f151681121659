/// A JSON5 document as a tree, so the config can be checked field by field with exact paths.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    /// A string Foundation's JSON5 reader refuses once it unescapes it (a NUL, half a surrogate
    /// pair): kept, so the field it is in can say what is wrong with it.
    case unreadableString(UnreadableString)

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var fields: [String: JSONValue] = [:]
            for key in object.allKeys { fields[key.stringValue] = try object.decode(JSONValue.self, forKey: key) }
            self = .object(fields)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() { self = .null }
        else if let value = try? single.decode(Bool.self) { self = .bool(value) }
        else if let value = try? single.decode(Double.self) { self = .number(value) }
        else {
            do {
                self = .string(try single.decode(String.self))
            } catch DecodingError.typeMismatch {
                // A number too large for a Double (1e400): kept, so the field it is in can say so.
                self = .number(.infinity)
            } catch {
                self = .unreadableString(UnreadableString(error))
            }
        }
    }

    /// What the value is, for error messages: "a string", "an array", …
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case let .unreadableString(string): "a string with \(string.what)"
        case .array: "an array"
        case .object: "an object"
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
