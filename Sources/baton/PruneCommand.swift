import BatonCore
import BatonIPC
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
        let response = try context.call(Request(op: .prune, dryRun: dryRun))
        let report = response.prune ?? PruneReport(dryRun: dryRun)
        if arguments.flag("json") {
            print(Format.json(report))
            return ExitCode.success
        }
        let verb = dryRun ? "would remove" : "removed"
        if report.total == 0 {
            print("nothing to remove")
        } else {
            let parts = report.removed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            print("\(verb) \(report.total) run\(report.total == 1 ? "" : "s"): \(parts.joined(separator: ", "))")
        }
        return ExitCode.success
    }
}
