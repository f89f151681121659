import BatonCore
import BatonIPC

/// `baton cancel ACTION|RUN`: stop runs in flight.
enum CancelCommand {
    static let spec = CommandSpec(
        name: "cancel",
        abstract: "Cancel runs. RUN cancels one run; ACTION every run in flight of it. Queued runs are dropped; loading ones get SIGTERM on their process group, then SIGKILL after the action's killGrace.",
        arguments: "ACTION|RUN",
        options: [
            OptionSpec(long: "key", short: nil, value: "KEY", help: "only the runs of this key (with ACTION)"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the runs cancelled as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let target = arguments.positionals.first else {
            throw UsageError("baton cancel needs one ACTION or RUN id")
        }
        let request = Int64(target).map { Request(op: .cancel, run: $0) }
            ?? Request(op: .cancel, action: target, key: arguments.value("key"))
        let runs = try context.call(request).runs ?? []
        if arguments.flag("json") {
            print(Format.json(runs))
        } else if runs.isEmpty {
            print("nothing in flight to cancel")
        } else {
            for run in runs { print("cancelling \(run.action) run \(run.id) (was \(run.phase.rawValue))") }
        }
        return ExitCode.success
    }
}
