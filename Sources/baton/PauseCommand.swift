import BatonClient
import BatonCore
import FoundationEssentials

/// `baton pause ACTION [--for 2h] --reason "…"` and `baton resume ACTION`.
enum PauseCommand {
    static let spec = CommandSpec(
        name: "pause",
        abstract: """
            Pause ACTION: its triggers are refused (exit 75) with who paused it, why and until when, and its scheduled \
            slots are recorded as skipped, until baton resume or the --for time ends. Runs loading go on; queued ones wait \
            until it ends. With --hold, triggers are queued instead (single flight applies; the runs start in trigger \
            order when the pause ends), scheduled slots too. Needs the \
            pause right (allow: { pause: … }), root or batond's own user.
            """,
        arguments: "ACTION",
        options: [OptionSpec(long: "reason", short: nil, value: "TEXT", help: "why (required): what a refused trigger is told"),
                  OptionSpec(long: "for", short: nil, value: "DURATION", help: "end the pause by itself after this long (\"2h\", \"30m\")"),
                  OptionSpec(long: "hold", short: nil, value: nil, help: "queue triggers while paused (they start when it ends) instead of refusing them")],
        run: run)

    static let resumeSpec = CommandSpec(
        name: "resume",
        abstract: "End ACTION's pause: its triggers run again.",
        arguments: "ACTION",
        options: [],
        run: resume)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let action = arguments.positionals.first else { throw UsageError("baton pause takes one action") }
        guard let reason = arguments.value("reason"), !reason.isEmpty else { throw UsageError("baton pause needs --reason TEXT") }
        var duration: Duration?
        if let text = arguments.value("for") {
            guard let parsed = DurationText.parse(text), parsed > .zero else { throw UsageError("--for expects a duration such as 2h or 30m, got \(text)") }
            duration = parsed
        }
        let pause = try context.suggestingAction(action) { try context.ask(.pause(action, reason: reason, for: duration, hold: arguments.flag("hold"))) }
        print(pause.map { "paused: " + $0.message(at: .now) } ?? "paused \(action)")
        return ExitCode.success
    }

    static func resume(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let action = arguments.positionals.first else { throw UsageError("baton resume takes one action") }
        let ended = try context.suggestingAction(action) { try context.ask(.resume(action)) }
        print(ended.map { "resumed \(action) (paused by \($0.by) \(Format.age($0.at)): \($0.reason))" } ?? "\(action) was not paused")
        return ExitCode.success
    }
}
