/// A point in time in microseconds since the Unix epoch, as the history stores it.
public struct Timestamp: RawRepresentable, Hashable, Comparable, Codable, Sendable {
    public var rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public init(microseconds: Int64) { self.rawValue = microseconds }

    /// Microseconds as a whole number; a field that holds another number says so, naming it.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decodeWholeNumber(Int64.self, expected: "a whole number (microseconds since 1970)")
    }

    /// Seconds since the epoch, for Foundation dates.
    public var seconds: Double { Double(rawValue) / 1_000_000 }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.rawValue < rhs.rawValue }
    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp {
        Timestamp(rawValue: lhs.rawValue + rhs.microseconds)
    }
    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration {
        .microseconds(lhs.rawValue - rhs.rawValue)
    }
}

extension Duration {
    /// The duration in whole microseconds.
    public var microseconds: Int64 {
        let (seconds, attoseconds) = components
        let (micros, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = micros.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        return overflowAgain ? (micros < 0 ? .min : .max) : total
    }

    /// The duration in seconds as a floating-point number.
    public var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
