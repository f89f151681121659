import BatonCore
import BatonIPC
import BatonStore
import Foundation

/// `baton history`: past and current runs, newest first, filtered.
enum HistoryCommand {
    static let spec = CommandSpec(
        name: "history",
        abstract: """
            List runs, newest first. Works when batond is down, by reading the database file.
            """,
        arguments: "[ACTION]",
        options: [
            OptionSpec(long: "phase", short: nil, value: "PHASE", help: "only runs in this phase (repeatable)"),
            OptionSpec(long: "since", short: nil, value: "WHEN", help: "only runs queued since WHEN: 30m, 2h, 7d, today, 2026-11-01"),
            OptionSpec(long: "limit", short: "n", value: "N", help: "at most N runs (default 50)"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the runs as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        var filter = HistoryFilter()
        filter.actions = arguments.positionals
        for name in arguments.all("phase") {
            guard let phase = Phase(rawValue: name) else {
                throw UsageError("baton history: --phase expects one of \(Phase.allCases.map(\.rawValue).joined(separator: ", ")), got \(name)")
            }
            filter.phases.append(phase)
        }
        if let since = arguments.value("since") {
            guard let time = TimeText.parse(since) else {
                throw UsageError("baton history: --since expects 30m, 2h, 7d, today, yesterday or 2026-11-01[T14:00], got \(since)")
            }
            filter.since = time
        }
        if let limit = arguments.value("limit") {
            guard let value = Int(limit), value >= 0, value <= 100_000 else { throw UsageError("baton history: --limit expects a number from 0 to 100000, got \(limit)") }
            filter.limit = value
        }
        let runs = try Query.history(filter, context)
        if arguments.flag("json") {
            print(Format.json(runs))
            return ExitCode.success
        }
        let now = Timestamp.now
        let rows = runs.map { run -> [String] in
            return [String(run.id), run.key, context.paint(run.phase.rawValue, phase: run.phase), Format.time(run.queuedAt), Format.duration(run, now: now), run.error ?? ""]
        }
        print(Format.table(["RUN", "ACTION", "PHASE", "QUEUED", "TOOK", "ERROR"], rows), terminator: "")
        return ExitCode.success
    }
}

/// Times as people write them for `--since`: `30m`, `2h`, `7d` (ago), `today`, `yesterday`,
/// `2026-11-01`, `2026-11-01T14:00` (local time).
enum TimeText {
    static func parse(_ text: String, now: Timestamp = .now) -> Timestamp? {
        if let duration = DurationText.parse(text) { return Timestamp(rawValue: now.rawValue - duration.microseconds) }
        var seconds = time_t(now.rawValue / 1_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        parts.tm_hour = 0; parts.tm_min = 0; parts.tm_sec = 0; parts.tm_isdst = -1
        switch text {
        case "today": return Timestamp(rawValue: Int64(mktime(&parts)) * 1_000_000)
        case "yesterday":
            parts.tm_mday -= 1
            return Timestamp(rawValue: Int64(mktime(&parts)) * 1_000_000)
        default: break
        }
        let pieces = text.split(separator: "T", maxSplits: 1)
        let date = pieces[0].split(separator: "-")
        guard date.count == 3, let year = Int32(date[0]), let month = Int32(date[1]), let day = Int32(date[2]),
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
        return Timestamp(rawValue: Int64(mktime(&fields)) * 1_000_000)
    }
}
