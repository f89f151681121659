import BatonClient
import BatonCore

/// `baton approve RUN`, `baton deny RUN --reason TEXT` and `baton approvals [--json]`.
enum ApproveCommand {
    static let spec = CommandSpec(
        name: "approve",
        abstract: """
            Approve RUN, which waits for approval (its action's approve): it starts with the params it was triggered \
            with. Only one of the action's approve.by may (exit 77 otherwise), never the run's own trigger unless \
            approve.self is true; a run is decided once.
            """,
        arguments: "RUN",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the run as JSON")],
        run: approve)

    static let denySpec = CommandSpec(
        name: "deny",
        abstract: "Deny RUN, which waits for approval: it ends cancelled (\"denied by you: TEXT\") and never starts.",
        arguments: "RUN",
        options: [OptionSpec(long: "reason", short: nil, value: "TEXT", help: "why: kept with the run and told its callers"),
                  OptionSpec(long: "json", short: nil, value: nil, help: "print the run as JSON")],
        run: deny)

    static let listSpec = CommandSpec(
        name: "approvals",
        abstract: "List the runs waiting for your approval: runs of actions whose approve.by includes you (your own triggers' only with approve.self).",
        arguments: "",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the runs as JSON")],
        run: list)

    static func approve(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let run = try runID(arguments, "approve")
        let decided = try context.ask(.approve(run))
        print(arguments.flag("json") ? Format.json(decided) : "approved \(decided.action) run \(run): \(decided.phase.rawValue)")
        return ExitCode.success
    }

    static func deny(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let run = try runID(arguments, "deny")
        let decided = try context.ask(.deny(run, reason: arguments.value("reason")))
        print(arguments.flag("json") ? Format.json(decided) : "denied \(decided.action) run \(run)" + (decided.error.map { ": \($0)" } ?? ""))
        return ExitCode.success
    }

    static func list(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw UsageError("baton approvals takes no arguments") }
        let runs = try context.ask(.approvals)
        if arguments.flag("json") {
            print(Format.json(runs))
        } else {
            print(text(runs), terminator: "")
        }
        return ExitCode.success
    }

    /// One line per run waiting: `run 7  deploy  ref=v2  by alice (uid 1001) 3m ago  waiting for approval by group:ops (until 14:05)`.
    static func text(_ runs: [RunSnapshot], now: Timestamp = .now) -> String {
        guard !runs.isEmpty else { return "nothing waits for your approval\n" }
        return runs.map { run in
            let shown = run.forTerminal
            var line = "run \(run.id)  \(shown.action)"
            if !shown.params.isEmpty { line += "  " + shown.params.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
            if let principal = Format.principal(run.trigger, via: shown.via) {
                line += "  by \(principal)"
            } else {
                if let peer = run.trigger { line += "  by \(Format.userName(peer.uid)) (uid \(peer.uid))" }
                // A hook's or a need's run: what made it (`success hook of build run 41`), for its approver to look at.
                if let via = shown.via { line += "  (\(via))" }
            }
            line += "  \(Format.age(run.queuedAt, now: now))"
            if let approving = Format.approving(run) { line += "  \(approving)" }
            return line + "\n"
        }.joined()
    }

    private static func runID(_ arguments: ParsedArguments, _ command: String) throws -> Int64 {
        guard arguments.positionals.count == 1, let run = Int64(arguments.positionals[0]) else {
            throw UsageError("baton \(command) needs one RUN id (a number)")
        }
        return run
    }
}
