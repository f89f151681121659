import FoundationEssentials

/// A hook request's JSON body as a tree, for JSON Pointers to look into.
public indirect enum Payload: Decodable, Equatable, Sendable {
    case null
    case bool(Bool)
    /// An integer as written (a delivery's ids and counts are integers).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([Payload])
    case object([String: Payload])

    /// The body read as JSON; nil when it is not JSON.
    public static func read(_ body: [UInt8]) -> Payload? {
        try? JSONDecoder().decode(Payload.self, from: Data(body))
    }

    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [Payload] = []
            while !array.isAtEnd { items.append(try array.decode(Payload.self)) }
            self = .array(items)
        } else if let object = try? decoder.container(keyedBy: Key.self) {
            var fields: [String: Payload] = [:]
            for key in object.allKeys { fields[key.stringValue] = try object.decode(Payload.self, forKey: key) }
            self = .object(fields)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { self = .null }
            else if let value = try? single.decode(Bool.self) { self = .bool(value) }
            else if let value = try? single.decode(Int64.self) { self = .integer(value) }
            else if let value = try? single.decode(Double.self) { self = .number(value) }
            else { self = .string(try single.decode(String.self)) }
        }
    }

    /// The text a param takes from this value: a string as it is, a number or a boolean as JSON
    /// writes it; nil for null, an object or an array.
    public var paramText: String? {
        switch self {
        case let .string(text): text
        case let .integer(value): String(value)
        case let .number(value): value.isFinite ? "\(value)" : nil
        case let .bool(value): value ? "true" : "false"
        case .null, .array, .object: nil
        }
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
