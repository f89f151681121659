import BatonClient
import BatonCore
import Dispatch
import FoundationEssentials
import Glibc

/// `baton run ACTION`: trigger an action and, unless detached, follow it to its end.
enum RunCommand {
    static let spec = CommandSpec(
        name: "run",
        abstract: """
            Trigger ACTION and wait for its outcome. On a terminal it shows the loading state and progress.
            Exits 0 on success, 1 on failure, 3 if cancelled, 75 if rejected as busy.
            Ctrl-C stops waiting, not the run: it says how to wait for or cancel it.
            Inside the action's cooldown nothing runs: it exits 0 with the last success.
            With --scheduled, a slot whose run has ended runs nothing: it exits 0 and names that run.
            """,
        arguments: "ACTION",
        options: [
            OptionSpec(long: "param", short: "p", value: "NAME=VALUE", help: "pass a param (repeatable)"),
            OptionSpec(long: "param-file", short: nil, value: "NAME=FILE",
                       help: "pass a param read from FILE (- for stdin): a secret stays out of the command line"),
            OptionSpec(long: "policy", short: nil, value: "POLICY", help: "reject, join, queue or replace, where the action allows it"),
            OptionSpec(long: "force", short: nil, value: nil, help: "run even inside the action's cooldown, where the action allows force"),
            OptionSpec(long: "scheduled", short: nil, value: "TIME",
                       help: "fire the schedule slot of TIME (now, @SECONDS, @USECus, ISO 8601): one run per action and slot"),
            OptionSpec(long: "detach", short: "d", value: nil, help: "print the run id once it is queued and exit"),
            OptionSpec(long: "follow", short: "f", value: nil, help: "print the run's output as it comes, then the outcome"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the run as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let action = arguments.positionals.first else {
            throw UsageError("baton run needs exactly one ACTION")
        }
        let params = try ParamFiles.read(arguments, into: try arguments.pairs("param", command: "run"), command: "run")
        var policy: Policy?
        if let name = arguments.value("policy") {
            guard let value = Policy(rawValue: name) else {
                throw UsageError("baton run: --policy expects reject, join, queue or replace, got \(name)",
                                 hint: Suggestion.didYouMean(name, among: Policy.allCases.map(\.rawValue)))
            }
            policy = value
        }
        let detach = arguments.flag("detach")
        let json = arguments.flag("json")
        var built = Trigger(action: action, params: params, policy: policy, force: arguments.flag("force"))
        if let text = arguments.value("scheduled") {
            guard let fired = ScheduledTime.parse(text) else {
                throw UsageError("baton run: --scheduled expects now, @SECONDS, @USECus or an ISO 8601 time (2026-12-01T03:00:00Z), got \(text)")
            }
            let info = try context.call { try await $0.actions() }.first { $0.name == action }
            built.slot = try ScheduledTime.slot(fired: fired, action: info)
        }
        let trigger = built
        if arguments.flag("follow") {
            guard !detach else { throw UsageError("baton run: --follow and --detach exclude each other") }
            return try context.suggestingAction(action) { try runFollowing(trigger, json: json, context) }
        }
        let spinner = (!json && isatty(2) == 1) ? Spinner() : nil
        let interrupt = detach ? nil : Interrupt(action: action, spinner: spinner)
        let outcome: RunOutcome
        do {
            outcome = try context.suggestingAction(action) {
                try context.call { [socket = context.socketPath] client in
                    detach ? try await trigger.detached(client) : try await trigger.followed(client, spinner, interrupt, socket: socket)
                }
            }
        } catch {
            spinner?.clear()
            throw error
        }
        spinner?.clear()
        let run = outcome.run
        if json {
            print(Format.json(RunAnswer(outcome)))
        } else if outcome.decision == .cooled {
            print(cooledLine(run, cooldown: outcome.cooldown, context: context))
        } else if outcome.decision == .slotRan {
            print(slotRanLine(run, context: context))
            return ExitCode.success
        } else if detach {
            print(run.id)
            // stdout is the id alone (scripts read it); what the trigger replaced goes beside it.
            if !outcome.replaced.isEmpty { Stdio.error.write(Data("\(replacedWords(outcome.replaced))\n".utf8)) }
        } else {
            print(outcomeLine(run, shared: outcome.shared, replaced: outcome.replaced, context: context))
        }
        return detach ? ExitCode.success : ExitCode.of(run.phase)
    }

    /// Triggers (answered once queued), prints the run's output as it comes, then the outcome.
    static func runFollowing(_ trigger: Trigger, json: Bool, _ context: Context) throws -> Int32 {
        let interrupt = Interrupt(action: trigger.action, spinner: nil)
        let queued = try context.call { try await trigger.detached($0) }
        interrupt.following(queued.run)
        var last: UInt8?
        let run = try LogsCommand.follow(queued.run.id, from: 0, follow: true, only: OutputSelection(), context, last: &last)
        if last != nil && last != UInt8(ascii: "\n") { print() }
        var outcome = queued
        outcome.run = run
        if json { print(Format.json(RunAnswer(outcome))) }
        else { print(outcomeLine(run, shared: queued.shared, replaced: queued.replaced, context: context)) }
        return ExitCode.of(run.phase)
    }

    /// The trigger the arguments describe, sent through `BatonClient`.
    struct Trigger: Sendable {
        var action: String
        var params: [String: String]
        var policy: Policy?
        var force: Bool
        var slot: Timestamp?

        /// Answered once the run is durably queued (`--detach`, `--follow`).
        func detached(_ client: BatonClient) async throws -> RunOutcome {
            try await client.detach(action, params: params, policy: policy, force: force, slot: slot)
        }

        /// Answered at the run's end, whatever it is; each update on the way goes to the spinner,
        /// and to what Ctrl-C says.
        /// A connection lost once the run is known (batond restarting) is made again and the run waited for.
        func followed(_ client: BatonClient, _ spinner: Spinner?, _ interrupt: Interrupt?, socket: String) async throws -> RunOutcome {
            let handle = client.trigger(action, params: params, policy: policy, force: force, slot: slot, throwingOnCancel: false)
            var seen: RunSnapshot?
            do {
                for try await update in handle.updates {
                    seen = update.run
                    interrupt?.following(update.run)
                    if !update.run.phase.isTerminal { spinner?.show(update.run) }
                }
                return try await handle.outcome
            } catch let error as BatonClientError {
                // Once the run is known the trigger was taken: nothing after it may end in
                // `.restarting`, which `Context.call` answers by sending the trigger again.
                guard let seen else { throw error }
                switch error {
                case .unavailable, .restarting: break
                default: throw error
                }
                let run = try await BatonClient.wait(run: seen.id, socket: socket) { update in
                    interrupt?.following(update.run)
                    if !update.run.phase.isTerminal { spinner?.show(update.run) }
                }
                return RunOutcome(run: run, decision: nil, shared: false)
            }
        }
    }

    /// `--json`'s answer: the run, and what the trigger did.
    struct RunAnswer: Encodable {
        var run: RunSnapshot
        var decision: TriggerDecision?
        var shared: Bool
        /// The runs the trigger replaced; absent when none.
        var replaced: [Int64]?

        init(_ outcome: RunOutcome) {
            run = outcome.run
            decision = outcome.decision
            shared = outcome.shared
            replaced = outcome.replaced.isEmpty ? nil : outcome.replaced
        }
    }

    /// `replaced run 7`, `replaced runs 7, 8`.
    static func replacedWords(_ runs: [Int64]) -> String {
        "replaced run\(runs.count == 1 ? "" : "s") " + runs.map(String.init).joined(separator: ", ")
    }

    /// `✓ deploy run 7 succeeded in 2.1s`, or how it failed or was cancelled, as a terminal shows
    /// it; `deploy run 8 (replaced run 7)` where the trigger replaced runs.
    static func outcomeLine(_ run: RunSnapshot, shared: Bool, replaced: [Int64] = [], context: Context) -> String {
        let run = run.forTerminal
        let name = "\(run.action) run \(run.id)\(shared ? " (shared)" : "")\(replaced.isEmpty ? "" : " (\(replacedWords(replaced)))")"
        let took = Format.duration(run)
        switch run.phase {
        case .success:
            return context.paint("✓", .green) + " \(name) succeeded in \(took)"
        case .failure:
            return context.paint("✗", .red) + " \(name) failed after \(took): \(run.error ?? "no error recorded")"
        case .cancelled:
            return context.paint("⊘", .yellow) + " \(name) " + cancelled(run)
        default:
            return "\(name) is \(run.phase.rawValue)"
        }
    }
}

extension RunCommand {
    /// `✓ backup slot 2026-12-01 03:00:00 already ran: run 7 succeeded, nothing run`.
    static func slotRanLine(_ run: RunSnapshot, context: Context) -> String {
        let run = run.forTerminal
        let slot = run.slot.map { " " + Format.time($0) } ?? ""
        return context.paint("✓", .green) + " \(run.action) slot\(slot) already ran: run \(run.id) \(pastTense(run.phase)), nothing run"
    }

    static func pastTense(_ phase: Phase) -> String {
        switch phase {
        case .success: "succeeded"
        case .failure: "failed"
        case .cancelled: "was cancelled"
        default: "is \(phase.rawValue)"
        }
    }

    /// `✓ deploy run 7 succeeded 2m ago; cooldown 10m, nothing run`: a trigger inside the cooldown.
    static func cooledLine(_ run: RunSnapshot, cooldown: Int64?, context: Context, now: Timestamp = .now) -> String {
        let ago = run.endedAt.map { " " + Format.age($0, now: now) } ?? ""
        let window = cooldown.map { "cooldown " + roundWindow(DurationText.format(.microseconds($0))) } ?? "cooldown"
        return context.paint("✓", .green) + " \(run.action) run \(run.id) succeeded\(ago); \(window), nothing run"
    }

    /// A window as the config says it: `10m`, `1h`, not `10m00s`.
    static func roundWindow(_ text: String) -> String {
        var text = text
        if text.hasSuffix("m00s") { text.removeLast(3) }
        if text.hasSuffix("h00m") { text.removeLast(3) }
        return text
    }

    /// Why a run was cancelled, in words: `cancelled by alice after 2.1s`, `replaced by run 9`,
    /// `cancelled: batond shut down`.
    static func cancelled(_ run: RunSnapshot) -> String {
        let after = run.startedAt == nil ? " before it started" : " after \(Format.duration(run))"
        if let uid = run.cancelledBy { return "cancelled by \(Format.userName(uid))" + after }
        switch run.reason {
        case "replaced": return (run.error ?? "replaced by another run") + after
        case "cancelled", nil: return "cancelled" + after
        default: return "cancelled" + after + ": " + (run.error ?? run.reason ?? "")
        }
    }
}
