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
            print(text(runs, firing: firing(of: runs, context)), terminator: "")
        }
        return ExitCode.success
    }

    /// The run that led to each waiting hook's or needed run (its firing run, or the first run
    /// that needs it), as `show` tells it (secret params masked), by waiting run; one the
    /// caller may not read is left out.
    static func firing(of runs: [RunSnapshot], _ context: Context) -> [Int64: RunSnapshot] {
        var found: [Int64: RunSnapshot] = [:]
        for run in runs where run.hook != nil || run.via != nil {
            let cause = run.hook?.run ?? (try? context.ask(.show(run.id)))?.run.neededBy?.first?.run
            if let cause, let detail = try? context.ask(.show(cause)) { found[run.id] = detail.run }
        }
        return found
    }

    /// One line per run waiting: `run 7  deploy  ref=v2  by alice (uid 1001) 3m ago  waiting for
    /// approval by group:ops (until 14:05)`, and under a hook's or a need's run, the run that led
    /// to it with its params: `  from build run 41  ref=evil  by ann (uid 1002)`.
    static func text(_ runs: [RunSnapshot], firing: [Int64: RunSnapshot] = [:], now: Timestamp = .now) -> String {
        guard !runs.isEmpty else { return "nothing waits for your approval\n" }
        return runs.map { run in
            let shown = run.forTerminal
            var line = "run \(run.id)  \(shown.action)"
            line += paramsText(shown.params)
            if let principal = Format.principal(run.trigger, via: shown.via) {
                line += "  by \(principal)"
            } else {
                if let peer = run.trigger { line += "  by \(Format.userName(peer.uid)) (uid \(peer.uid))" }
                // A hook's or a need's run: what made it (`success hook of build run 41`), for its approver to look at.
                if let via = shown.via { line += "  (\(via))" }
            }
            line += "  \(Format.age(run.queuedAt, now: now))"
            if let approving = Format.approving(run) { line += "  \(approving)" }
            guard let cause = firing[run.id]?.forTerminal else { return line + "\n" }
            return line + "\n  from \(cause.action) run \(cause.id)" + paramsText(cause.params)
                + (cause.trigger.map { "  by \(Format.userName($0.uid)) (uid \($0.uid))" } ?? "") + "\n"
        }.joined()
    }

    /// Params in full, sorted: `  ref=v2 env=prod` (nothing without).
    static func paramsText(_ params: [String: String]) -> String {
        params.isEmpty ? "" : "  " + params.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    private static func runID(_ arguments: ParsedArguments, _ command: String) throws -> Int64 {
        guard arguments.positionals.count == 1, let run = Int64(arguments.positionals[0]) else {
            throw UsageError("baton \(command) needs one RUN id (a number)")
        }
        return run
    }
}
