import BatonCore
import Foundation

/// Times as people write them for `--since`: `30m`, `2h`, `7d` (ago), `today`, `yesterday`,
/// `2026-11-01`, `2026-11-01T14:00` (local time).
enum TimeText {
    /// The forms `parse` accepts, for error messages.
    static let forms = "30m, 2h, 7d, today, yesterday, 2026-11-01 or 2026-11-01T14:00"

    static func parse(_ text: String, now: Timestamp = .now) -> Timestamp? {
        if let duration = DurationText.parse(text) { return Timestamp(rawValue: now.rawValue - duration.microseconds) }
        var seconds = time_t(now.rawValue / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        parts.tm_hour = 0; parts.tm_min = 0; parts.tm_sec = 0; parts.tm_isdst = -1
        switch text {
        case "today": return timestamp(mktime(&parts))
        case "yesterday":
            parts.tm_mday -= 1
            return timestamp(mktime(&parts))
        default: break
        }
        let pieces = text.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
        guard let day = pieces.first, !day.isEmpty else { return nil }
        let date = day.split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, let year = Int32(date[0]), (1970...9999).contains(year), let month = Int32(date[1]), let day = Int32(date[2]),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900; fields.tm_mon = month - 1; fields.tm_mday = day; fields.tm_isdst = -1
        if pieces.count == 2 {
            let clock = pieces[1].split(separator: ":")
            guard (2...3).contains(clock.count), let hour = Int32(clock[0]), let minute = Int32(clock[1]),
                  (0...23).contains(hour), (0...59).contains(minute) else { return nil }
            fields.tm_hour = hour; fields.tm_min = minute
            if clock.count == 3 { guard let second = Int32(clock[2]), (0...59).contains(second) else { return nil }; fields.tm_sec = second }
        }
        return timestamp(mktime(&fields))
    }

    /// Seconds from mktime as a timestamp; nil when mktime failed.
    private static func timestamp(_ seconds: time_t) -> Timestamp? {
        guard seconds != -1 else { return nil }
        let (micros, overflow) = Int64(seconds).multipliedReportingOverflow(by: 1_000_000)
        return overflow ? nil : Timestamp(rawValue: micros)
    }
}
