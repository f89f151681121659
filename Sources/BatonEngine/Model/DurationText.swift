/// Durations as people write and read them: `500ms`, `30s`, `1.5s`, `5m`, `1h30m`, `7d`.
public enum DurationText {
    private static let units: [(suffix: String, microseconds: Double)] = [
        ("ms", 1_000), ("us", 1), ("µs", 1), ("s", 1_000_000), ("m", 60_000_000),
        ("h", 3_600_000_000), ("d", 86_400_000_000), ("w", 604_800_000_000),
    ]

    /// The longest duration accepted: 100 years.
    public static let maximum: Duration = .seconds(100 * 365 * 86_400)

    /// Parses a sequence of number-and-unit parts (`1h30m`); nil when the text is not one, or is
    /// longer than `maximum`.
    public static func parse(_ text: String) -> Duration? {
        guard let total = microseconds(text), total <= Double(maximum.microseconds) else { return nil }
        return .microseconds(Int64(total.rounded()))
    }

    /// Whether the text is a well-formed duration that is longer than `maximum` (for messages
    /// that say "too large" rather than "not a duration").
    public static func isTooLarge(_ text: String) -> Bool {
        microseconds(text).map { $0 > Double(maximum.microseconds) } ?? false
    }

    private static func microseconds(_ text: String) -> Double? {
        var rest = Substring(text.trimmingWhitespace())
        guard !rest.isEmpty, rest.utf8.count <= 64 else { return nil }
        var total: Double = 0
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = Double(number), value.isFinite else { return nil }
            rest = rest.dropFirst(number.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.suffix) }) else { return nil }
            rest = rest.dropFirst(unit.suffix.count)
            total += value * unit.microseconds
        }
        return total
    }

    /// Formats a duration briefly: `850ms`, `1.2s`, `42s`, `3m04s`, `2h05m`, `3d04h`.
    public static func format(_ duration: Duration) -> String {
        // Int64.min has no positive counterpart; one microsecond less changes nothing shown.
        let micros = max(duration.microseconds, -Int64.max)
        if micros < 0 { return "-" + format(.microseconds(-micros)) }
        if micros < 1_000 { return "\(micros)µs" }
        if micros < 1_000_000 { return "\(micros / 1_000)ms" }
        // Rounded without adding first, so that the largest values cannot overflow.
        if micros < 10_000_000 {
            let tenths = micros / 100_000 + (micros % 100_000 >= 50_000 ? 1 : 0)
            return "\(tenths / 10).\(tenths % 10)s"
        }
        let seconds = micros / 1_000_000 + (micros % 1_000_000 >= 500_000 ? 1 : 0)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3_600 { return "\(seconds / 60)m\(twoDigits(seconds % 60))s" }
        if seconds < 86_400 { return "\(seconds / 3_600)h\(twoDigits(seconds % 3_600 / 60))m" }
        return "\(seconds / 86_400)d\(twoDigits(seconds % 86_400 / 3_600))h"
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and newlines.
    public func trimmingWhitespace() -> SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let end = lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
