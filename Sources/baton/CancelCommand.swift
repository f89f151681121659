import BatonClient
import BatonCore

/// `baton cancel ACTION|RUN`: stop runs in flight, and wait until they have ended.
enum CancelCommand {
    static let spec = CommandSpec(
        name: "cancel",
        abstract: """
            Cancel runs and wait until they have ended (like systemctl stop), printing how each ended. RUN cancels one \
            run; ACTION every run in flight of it; --all every run in flight of every action. Queued runs are dropped; loading ones get SIGTERM on their process \
            group, then SIGKILL after the action's killGrace. A run that had already ended is reported as it ended.
            """,
        arguments: "ACTION|RUN|--all",
        options: [
            OptionSpec(long: "key", short: nil, value: "KEY", help: "only the runs of this key (with ACTION)"),
            OptionSpec(long: "all", short: nil, value: nil, help: "every run in flight, of every action (what the package's removal does)"),
            OptionSpec(long: "no-wait", short: nil, value: nil, help: "return once the cancel is recorded, without waiting for the runs to end"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the runs as JSON (as they ended, or as they were with --no-wait)"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        var runs = try cancelled(arguments, context)
        let alreadyEnded = Set(runs.filter(\.phase.isTerminal).map(\.id))
        if !arguments.flag("no-wait") {
            runs = try runs.map { run in
                run.phase.isTerminal ? run : try context.call { try await $0.wait(run: run.id) }
            }
        }
        print(arguments.flag("json") ? Format.json(runs) + "\n" : text(runs, alreadyEnded: alreadyEnded, context: context), terminator: "")
        return ExitCode.success
    }

    /// The runs the cancel named, as batond answered (loading ones still loading while they stop).
    static func cancelled(_ arguments: ParsedArguments, _ context: Context) throws -> [RunSnapshot] {
        let key = arguments.value("key")
        if arguments.flag("all") {
            guard arguments.positionals.isEmpty, key == nil else { throw UsageError("baton cancel --all takes no ACTION, RUN or --key") }
            // Every action the caller may cancel; refused on every one, the refusal is the answer.
            return try context.call { client in
                var runs: [RunSnapshot] = []
                var refusal: BatonClientError?, allowed = false
                for action in try await client.actions() {
                    do {
                        runs += try await client.cancel(action: action.name)
                        allowed = true
                    } catch let error as BatonClientError {
                        guard case .forbidden = error else { throw error }
                        refusal = error
                    }
                }
                if !allowed, let refusal { throw refusal }
                return runs
            }
        }
        guard arguments.positionals.count == 1, let target = arguments.positionals.first else {
            throw UsageError("baton cancel needs one ACTION or RUN id, or --all")
        }
        return try context.suggestingAction(target) {
            try context.call { client in
                if let id = Int64(target) { try await client.cancel(run: id) } else { try await client.cancel(action: target, key: key) }
            }
        }
    }

    /// How each run ended (or is ending), one line each, as a terminal shows it.
    static func text(_ runs: [RunSnapshot], alreadyEnded: Set<Int64>, context: Context, now: Timestamp = .now) -> String {
        guard !runs.isEmpty else { return "nothing in flight to cancel\n" }
        return runs.map { run in
            let shown = run.forTerminal
            if alreadyEnded.contains(run.id) {
                return "\(shown.action) run \(run.id) had already ended: \(Format.phaseWord(run)) \(Format.age(run.endedAt ?? run.queuedAt, now: now))\n"
            }
            if run.phase.isTerminal { return RunCommand.outcomeLine(run, shared: false, context: context) + "\n" }
            return "cancelling \(shown.action) run \(run.id) (\(run.phase.rawValue))\n"
        }.joined()
    }
}
