/// Whole numbers on the wire, read so that a wrong one is named. Foundation's JSONDecoder says only
/// "The given data was not valid JSON", of no field, of 1.5 or 1e308 where an integer belongs (its
/// own error inside, which becomes that at the top); these say which field and what came instead
/// (`filter.limit: 1e+308 is out of range: expected …`). A value of another kind is still a type
/// mismatch.
extension SingleValueDecodingContainer {
    /// The integer here, or `dataCorrupted` at this field saying what number came instead.
    public func decodeWholeNumber<T: FixedWidthInteger & Decodable>(_ type: T.Type, expected: String) throws -> T {
        do {
            return try decode(T.self)
        } catch let error as DecodingError where !error.isDataCorrupted {
            throw error
        } catch {
            throw DecodingError.dataCorruptedError(in: self, debugDescription: WrongNumber.message(try? decode(Double.self), expected: expected))
        }
    }

    /// What the value here is, for a message: `1.5`, `true`, `null`, `a string`, `an array`, `an object`.
    public var describedValue: String {
        if decodeNil() { return "null" }
        if let flag = try? decode(Bool.self) { return String(flag) }
        if let number = try? decode(Double.self) { return WrongNumber.text(number) }
        if (try? decode(String.self)) != nil { return "a string" }
        if (try? decode([Anything].self)) != nil { return "an array" }
        if (try? decode([String: Anything].self)) != nil { return "an object" }
        return "a number too large to represent"
    }
}

extension KeyedDecodingContainer {
    /// The integer at `key` if there is one, or `dataCorrupted` at that field saying what number came instead.
    public func decodeWholeNumberIfPresent<T: FixedWidthInteger & Decodable>(_ type: T.Type, forKey key: Key, expected: String) throws -> T? {
        do {
            return try decodeIfPresent(T.self, forKey: key)
        } catch let error as DecodingError where !error.isDataCorrupted {
            throw error
        } catch {
            let number = (try? decodeIfPresent(Double.self, forKey: key)) ?? nil
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: WrongNumber.message(number, expected: expected))
        }
    }
}

extension DecodingError {
    var isDataCorrupted: Bool {
        if case .dataCorrupted = self { return true }
        return false
    }
}

/// The words for a number that is not the whole number a field takes.
enum WrongNumber {
    /// `expected …, got 1.5`; `1e+308 is out of range: expected …`; or too large for a Double.
    static func message(_ number: Double?, expected: String) -> String {
        guard let number, number.isFinite else { return "a number too large to represent: expected \(expected)" }
        if number.rounded() == number { return "\(text(number)) is out of range: expected \(expected)" }
        return "expected \(expected), got \(text(number))"
    }

    static func text(_ number: Double) -> String { "\(number)" }
}

/// Any JSON value, read for its kind only.
private struct Anything: Decodable {
    init(from decoder: any Decoder) throws {}
}
