import BatonClient
import BatonCore

/// `baton metrics`: batond's counters in Prometheus' text format.
enum MetricsCommand {
    static let spec = CommandSpec(
        name: "metrics",
        abstract: """
            Print batond's metrics in Prometheus' text exposition format: runs by action and outcome, \
            run durations, runs in flight and queued, triggers by decision, store commits, connections, \
            and the process's own series. Only the actions you may read are shown. For scraping, set \
            metrics: { listen: "127.0.0.1:9469" } in the config and point Prometheus at /metrics.
            """,
        arguments: "",
        options: [],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw UsageError("baton metrics takes no arguments") }
        print(try context.ask(.metrics), terminator: "")
        return ExitCode.success
    }
}
