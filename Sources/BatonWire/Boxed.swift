import BatonEngine
/// An optional value kept behind a reference, for the large and rarely set fields of a wire
/// value (`Response.run`, `Response.detail`, …): copying, creating and destroying the holder then
/// moves a pointer, not every field of a run or a transition. Setting the value makes a new box;
/// nothing mutates one, so a copy never sees another's change.
///
/// In `Codable` it is the value itself: absent or null reads as nil, nil is left out.
@propertyWrapper
public struct Boxed<Value: Sendable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    public init(wrappedValue: Value?) {
        box = wrappedValue.map(Box.init)
    }

    public var wrappedValue: Value? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}

extension Boxed: Equatable where Value: Equatable {
    public static func == (lhs: Boxed, rhs: Boxed) -> Bool { lhs.wrappedValue == rhs.wrappedValue }
}

extension Boxed: Decodable where Value: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wrappedValue: container.decodeNil() ? nil : try container.decode(Value.self))
    }
}

extension Boxed: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value = wrappedValue { try container.encode(value) } else { try container.encodeNil() }
    }
}

// Synthesized coding calls these for a `@Boxed` field (the more specific overload wins), so that a
// missing key reads as nil and nil is left out, as for a plain optional.
extension KeyedDecodingContainer {
    public func decode<Value: Decodable & Sendable>(_: Boxed<Value>.Type, forKey key: Key) throws -> Boxed<Value> {
        Boxed(wrappedValue: try decodeIfPresent(Value.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    public mutating func encode<Value: Encodable & Sendable>(_ value: Boxed<Value>, forKey key: Key) throws {
        try encodeIfPresent(value.wrappedValue, forKey: key)
    }
}
