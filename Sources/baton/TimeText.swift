import BatonCore
import FoundationEssentials
import Glibc

/// Times as people write them for `--since`: `30m`, `2h`, `7d` (ago), `today`, `yesterday`,
/// `2026-11-01`, `2026-11-01T14:00` (local time).
enum TimeText {
    /// The forms `parse` accepts, for error messages.
    static let forms = "30m, 2h, 7d, today, yesterday, 2026-11-01 or 2026-11-01T14:00"

    /// The time `text` names. A date or time that does not exist (`2026-02-31`, a month 13, a local
    /// time the clocks skip) is refused naming its field, never moved to another day as `mktime` would.
    static func parse(_ text: String, now: Timestamp = .now) throws(TimeTextError) -> Timestamp {
        if let duration = DurationText.parse(text) { return Timestamp(rawValue: now.rawValue - duration.microseconds) }
        var seconds = time_t(now.rawValue / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        parts.tm_hour = 0; parts.tm_min = 0; parts.tm_sec = 0; parts.tm_isdst = -1
        switch text {
        case "today": return try timestamp(mktime(&parts), text)
        case "yesterday":
            parts.tm_mday -= 1
            return try timestamp(mktime(&parts), text)
        default: return try absolute(text)
        }
    }

    /// `2026-11-01`, `2026-11-01T14:00` or `2026-11-01T14:00:30`, each field within its range.
    private static func absolute(_ text: String) throws(TimeTextError) -> Timestamp {
        let pieces = text.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
        let date = pieces[0].split(separator: "-", omittingEmptySubsequences: false).map { Int32($0) }
        let clock = pieces.count == 2 ? pieces[1].split(separator: ":", omittingEmptySubsequences: false).map { Int32($0) } : []
        let numbers = (date + clock).compactMap { $0 }
        guard date.count == 3, pieces.count == 1 || (2...3).contains(clock.count), numbers.count == date.count + clock.count else {
            throw TimeTextError(text: text)
        }
        var fields = tm()
        fields.tm_year = try within(numbers[0], 1970...9999, "year", text) - 1900
        fields.tm_mon = try within(numbers[1], 1...12, "month", text) - 1
        let days = daysIn(month: numbers[1], year: numbers[0])
        guard (1...days).contains(numbers[2]) else {
            throw TimeTextError(text: text, problem: "the day is \(numbers[2]), but \(monthNames[Int(numbers[1]) - 1]) \(numbers[0]) has \(days) days")
        }
        fields.tm_mday = numbers[2]
        fields.tm_isdst = -1
        if !clock.isEmpty {
            fields.tm_hour = try within(numbers[3], 0...23, "hour", text)
            fields.tm_min = try within(numbers[4], 0...59, "minute", text)
            if numbers.count == 6 { fields.tm_sec = try within(numbers[5], 0...59, "second", text) }
        }
        let (hour, minute) = (fields.tm_hour, fields.tm_min)
        let time = try timestamp(mktime(&fields), text)
        // mktime moves a local time the clocks skip (the hour of a change to summer time) to
        // another hour: a time of day asked for must come back as it was asked.
        if !clock.isEmpty, fields.tm_hour != hour || fields.tm_min != minute {
            throw TimeTextError(text: text, problem: "there is no such local time on that day (the clocks skip it)")
        }
        return time
    }

    private static func within(_ value: Int32, _ range: ClosedRange<Int32>, _ field: String, _ text: String) throws(TimeTextError) -> Int32 {
        guard range.contains(value) else {
            throw TimeTextError(text: text, problem: "the \(field) is \(value); expected \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// The days of a month (1 to 12) in the Gregorian calendar.
    static func daysIn(month: Int32, year: Int32) -> Int32 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static let monthNames = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                             "October", "November", "December"]

    /// Seconds from mktime as a timestamp; refused when mktime failed.
    private static func timestamp(_ seconds: time_t, _ text: String) throws(TimeTextError) -> Timestamp {
        let (micros, overflow) = Int64(seconds).multipliedReportingOverflow(by: 1_000_000)
        guard seconds != -1, !overflow else { throw TimeTextError(text: text, problem: "not a time this machine can represent") }
        return Timestamp(rawValue: micros)
    }
}

/// A `--since` or `--until` text that names no time, and why.
struct TimeTextError: Error, Equatable, CustomStringConvertible {
    var text: String
    /// What is wrong, naming the field; nil when the text has none of the forms.
    var problem: String?

    /// Follows the option's name: `--since expects …, got soon` or `--since 2026-02-31: the day is 31, …`.
    var description: String {
        problem.map { "\(text): \($0)" } ?? "expects \(TimeText.forms), got \(text)"
    }
}
