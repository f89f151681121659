import BatonCore
import BatonStore
import FoundationEssentials

/// `baton stats`: how each action has been doing.
enum StatsCommand {
    static let spec = CommandSpec(
        name: "stats",
        abstract: """
            Show how each action has been doing. Runs by outcome, success rate, p50, p95 and max duration of
            successful runs, p50 and p95 CPU time and peak memory of ended runs, the last success and failure,
            the current streak of failures, and recent durations. Works when batond is down.
            """,
        arguments: "[ACTION]...",
        options: [
            OptionSpec(long: "since", short: nil, value: "WHEN", help: "only runs that ended since WHEN: 30m, 2h, 7d, today, 2026-11-01"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the figures as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        var since: Timestamp?
        if let text = arguments.value("since") {
            do { since = try TimeText.parse(text) } catch { throw UsageError("baton stats: --since \(error)") }
        }
        let stats = try Query.stats(arguments.positionals, since: since, context)
        if arguments.flag("json") {
            print(Format.json(stats))
            return ExitCode.success
        }
        if stats.isEmpty {
            print("no runs yet")
            return ExitCode.success
        }
        print(table(stats, context: context, now: .now), terminator: "")
        return ExitCode.success
    }

    static func table(_ stats: [ActionStats], context: Context, now: Timestamp, width: Int? = Format.columns) -> String {
        let measured = stats.contains { $0.cpuP50 != nil || $0.memoryP50 != nil }
        let rows = stats.map(\.forTerminal).map { item -> [String] in
            let rate = item.successRate.map { Format.printf("%.0f%%", $0 * 100) } ?? "-"
            let streak = item.failureStreak > 0 ? context.paint("\(item.failureStreak) failing", .red) : "-"
            var row = [item.action, String(item.total), String(item.success), String(item.failure), String(item.cancelled), rate,
                       duration(item.p50), duration(item.p95), duration(item.max),
                       item.lastSuccess.map { Format.age($0, now: now) } ?? "never",
                       item.lastFailure.map { Format.age($0, now: now) } ?? "never", streak]
            // What runs used, where any run of any action was measured (a history without figures needs no empty columns).
            if measured {
                row.insert(contentsOf: [pair(item.cpuP50, item.cpuP95, duration), pair(item.memoryP50, item.memoryP95, memory)], at: 9)
            }
            if context.isTerminal { row.append(sparkline(item.recent, context: context)) }
            return row
        }
        var header = ["ACTION", "RUNS", "OK", "FAILED", "CANCELLED", "RATE", "P50", "P95", "MAX", "LAST OK", "LAST FAILED", "STREAK"]
        if measured { header.insert(contentsOf: ["CPU P50/P95", "MEMORY P50/P95"], at: 9) }
        if context.isTerminal { header.append("RECENT") }
        return Format.table(header, rows, width: width)
    }

    static func duration(_ micros: Int64?) -> String {
        micros.map { DurationText.format(.microseconds($0)) } ?? "-"
    }

    static func memory(_ bytes: Int64?) -> String {
        bytes.map(Format.bytes) ?? "-"
    }

    /// `310ms/0.4s`, `101 MiB/120 MiB`; `-` where nothing was measured.
    static func pair(_ p50: Int64?, _ p95: Int64?, _ format: (Int64?) -> String) -> String {
        p50 == nil && p95 == nil ? "-" : format(p50) + "/" + format(p95)
    }

    /// Recent durations as bars, oldest first, each coloured by its outcome.
    static func sparkline(_ recent: [ActionStats.Recent], context: Context) -> String {
        let bars = Array("▁▂▃▄▅▆▇█")
        let longest = recent.compactMap(\.duration).max() ?? 0
        return recent.map { run in
            let level = longest > 0 ? Int((Double(run.duration ?? 0) / Double(longest) * Double(bars.count - 1)).rounded()) : 0
            return context.paint(String(bars[min(max(level, 0), bars.count - 1)]), phase: run.phase)
        }.joined()
    }
}
