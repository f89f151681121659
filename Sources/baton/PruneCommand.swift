import BatonClient
import BatonCore
import BatonStore

/// `baton prune`: apply the retention settings now.
enum PruneCommand {
    static let spec = CommandSpec(
        name: "prune",
        abstract: """
            Remove ended runs that retention no longer keeps. batond also does this at start and every hour; runs
            in flight are never removed.
            """,
        arguments: "",
        options: [
            OptionSpec(long: "dry-run", short: "n", value: nil, help: "count what would be removed, remove nothing"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the counts as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw UsageError("baton prune takes no arguments") }
        let dryRun = arguments.flag("dry-run")
        let report = try context.ask(.prune(dryRun: dryRun))
        if arguments.flag("json") {
            print(Format.json(report))
            return ExitCode.success
        }
        print(summary(report))
        return ExitCode.success
    }

    /// `removed 3 runs: backup 2, deploy 1` (or `would remove 3 runs (1.2 MiB of output): …`), as a terminal shows it.
    static func summary(_ report: PruneReport) -> String {
        guard report.total > 0 else { return "nothing to remove" }
        let parts = report.forTerminal.removed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let counted = [report.outputBytes.map { "\(Format.bytes($0)) of output" },
                       report.artifactBytes.flatMap { $0 > 0 ? "\(Format.bytes($0)) of artifacts" : nil }].compactMap { $0 }
        let output = counted.isEmpty ? "" : " (\(counted.joined(separator: ", ")))"
        return "\(report.dryRun ? "would remove" : "removed") \(report.total) run\(report.total == 1 ? "" : "s")\(output): \(parts.joined(separator: ", "))"
    }
}
