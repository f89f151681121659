import FoundationEssentials
import Glibc

/// systemd's calendar expressions (`OnCalendar=`), as `systemd-analyze calendar` reads them:
/// Baton never guesses at the syntax itself. Checking one at config load and finding the slot a
/// timer fired both ask it; where it is missing, schedules are refused with that reason.
public enum SystemdCalendar {
    /// Where `systemd-analyze` is looked for, in order.
    public static let candidates = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]

    /// Why a calendar expression could not be used.
    public struct Problem: Error, Equatable {
        public var message: String
        public init(_ message: String) { self.message = message }
    }

    /// Whether systemd is the init system (`sd_booted`: /run/systemd/system exists): where its
    /// timers can fire schedules.
    public static var booted: Bool {
        var info = stat()
        return stat("/run/systemd/system", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// What systemd-analyze runs with: times in UTC, untranslated and uncoloured.
    static let environment = ["TZ": "UTC", "LC_ALL": "C", "SYSTEMD_COLORS": "0", "PATH": "/usr/bin:/bin"]

    /// The `systemd-analyze` binary, or nil when the machine has none.
    public static var analyzer: String? { candidates.first { access($0, X_OK) == 0 } }

    /// The first `count` firings of `expression` strictly after `after`, in order; empty when it
    /// never fires again. Throws what systemd-analyze said when it refuses the expression.
    public static func elapses(_ expression: String, after: Timestamp, count: Int = 1,
                               analyzer: String? = SystemdCalendar.analyzer) throws(Problem) -> [Timestamp] {
        guard let analyzer else { throw Problem("schedules need systemd: systemd-analyze was not found (looked in \(candidates.joined(separator: ", ")))") }
        let micros = String(after.rawValue % 1_000_000)
        let base = "@\(after.rawValue / 1_000_000).\(String(repeating: "0", count: 6 - micros.count) + micros)"
        let arguments = ["calendar", "--base-time=\(base)", "--iterations=\(max(count, 1))", "--", expression]
        let (status, output) = ChildProcess.run(analyzer, arguments, environment: environment)
        guard status == 0 else {
            let said = output.split(separator: "\n").first.map(String.init) ?? "exit status \(status)"
            throw Problem("systemd-analyze refused it: \(said)")
        }
        return parse(output)
    }

    /// The firings listed in `systemd-analyze calendar` output run with `TZ=UTC`: the "Next
    /// elapse" and "Iter. #N" lines ("Mon 2025-12-01 04:00:05 UTC"); "never" lists none.
    public static func parse(_ output: String) -> [Timestamp] {
        output.split(separator: "\n").compactMap { line -> Timestamp? in
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("Next elapse:") || trimmed.hasPrefix("Iter. #") else { return nil }
            guard let colon = trimmed.firstIndex(of: ":") else { return nil }
            let words = trimmed[trimmed.index(after: colon)...].split(separator: " ")
            guard words.count >= 3, words.last == "UTC" else { return nil }
            return utc(date: words[words.count - 3], time: words[words.count - 2])
        }
    }

    /// `2025-12-01` and `04:00:05` (UTC) as a timestamp.
    static func utc(date: Substring, time: Substring) -> Timestamp? {
        let d = date.split(separator: "-").compactMap { Int32($0) }, t = time.split(separator: ":").compactMap { Int32($0) }
        guard d.count == 3, t.count == 3 else { return nil }
        var parts = tm()
        parts.tm_year = d[0] - 1900
        parts.tm_mon = d[1] - 1
        parts.tm_mday = d[2]
        parts.tm_hour = t[0]
        parts.tm_min = t[1]
        parts.tm_sec = t[2]
        return Timestamp(rawValue: Int64(timegm(&parts)) * 1_000_000)
    }
}
