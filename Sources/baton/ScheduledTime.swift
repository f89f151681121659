import BatonCore
import FoundationEssentials
import Glibc

/// The time `baton run --scheduled=TIME` names: `now` (what the generator's services pass: the
/// slot is the latest firing at or before the service's start), `@SECONDS` (as `date +@%s`
/// prints), `@USECus`, or an ISO 8601 date and time, `2026-12-01T03:00:00Z` (a zone `Z` or
/// `±HH:MM`; none is local time).
enum ScheduledTime {
    static func parse(_ text: String, now: Timestamp = .now) -> Timestamp? {
        if text == "now" { return now }
        if text.hasPrefix("@") { return epoch(text.dropFirst()) }
        return iso(text)
    }

    private static func epoch(_ text: Substring) -> Timestamp? {
        if text.hasSuffix("us") {
            guard let micros = Int64(text.dropLast(2)), micros > 0 else { return nil }
            return Timestamp(rawValue: micros)
        }
        guard let seconds = Int64(text), seconds > 0, seconds < 1 << 40 else { return nil }
        return Timestamp(rawValue: seconds * 1_000_000)
    }

    /// `YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM]` (a space may stand for the `T`).
    private static func iso(_ text: String) -> Timestamp? {
        var rest = Substring(text)
        var offset: Int64?
        if rest.hasSuffix("Z") {
            offset = 0
            rest = rest.dropLast()
        } else if rest.count > 6, let sign = rest.dropLast(5).last, sign == "+" || sign == "-", rest.suffix(3).first == ":" {
            let zone = rest.suffix(5).split(separator: ":").compactMap { Int64($0) }
            guard zone.count == 2 else { return nil }
            offset = (sign == "-" ? -1 : 1) * (zone[0] * 3_600 + zone[1] * 60)
            rest = rest.dropLast(6)
        }
        let halves = rest.split(whereSeparator: { $0 == "T" || $0 == " " })
        guard halves.count == 2 else { return nil }
        let d = halves[0].split(separator: "-", omittingEmptySubsequences: false).map { Int32($0) }
        let t = halves[1].split(separator: ":", omittingEmptySubsequences: false).map { Int32($0) }
        guard d.count == 3, (2...3).contains(t.count), !d.contains(nil), !t.contains(nil) else { return nil }
        var parts = tm()
        parts.tm_year = d[0]! - 1900
        parts.tm_mon = d[1]! - 1
        parts.tm_mday = d[2]!
        parts.tm_hour = t[0]!
        parts.tm_min = t[1]!
        parts.tm_sec = t.count == 3 ? t[2]! : 0
        parts.tm_isdst = -1
        guard (1...12).contains(d[1]!), (1...31).contains(d[2]!), (0...23).contains(t[0]!), (0...59).contains(t[1]!),
              (0...60).contains(parts.tm_sec) else { return nil }
        let seconds: Int64 = if let offset { Int64(timegm(&parts)) - offset } else { Int64(mktime(&parts)) }
        return seconds > 0 ? Timestamp(rawValue: seconds * 1_000_000) : nil
    }

    /// The slot of a firing at `fired` of `action`: the latest time its schedules name at or
    /// before it (asked of systemd-analyze); an action without schedules (a cron line) takes the
    /// time given, to the second.
    static func slot(fired: Timestamp, action: ActionInfo?) throws -> Timestamp {
        guard let schedules = action?.schedules, !schedules.isEmpty else { return ScheduleSlot.truncated(fired) }
        // (`now` for an unscheduled action would make every trigger a slot of its own second.)
        let jitter = action?.scheduleJitter.map { Duration.microseconds($0) }
        do {
            guard let slot = try ScheduleSlot.slot(fired: fired, schedules: schedules, jitter: jitter) else {
                throw Failure(code: ExitCode.usage, message: "\(action?.name ?? "the action")'s schedule names no time in the year before \(Format.isoTime(fired, utc: true))",
                              hint: "baton schedules")
            }
            return slot
        } catch let problem as SystemdCalendar.Problem {
            throw Failure(code: ExitCode.usage, message: "cannot find the slot of --scheduled: \(problem.message)")
        }
    }
}
