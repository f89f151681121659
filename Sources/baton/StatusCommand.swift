import BatonClient
import BatonCore
import FoundationEssentials

/// `baton status`: each action, idle or loading since when, and its last outcome.
enum StatusCommand {
    static let spec = CommandSpec(
        name: "status",
        abstract: "Show what each action (or ACTION) is doing. Idle or loading (since when, with progress), how many queued (and for which lock), the last outcome, and the rules around the runs: hooks, cooldowns and each key's line of follow-ups, with their places.",
        arguments: "[ACTION]",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the status as JSON")],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count <= 1 else { throw UsageError("baton status takes one action at most") }
        var status = try context.ask(.status)
        if let name = arguments.positionals.first {
            status.actions = status.actions.filter { $0.name == name }
            guard !status.actions.isEmpty else { throw UsageError("no action \(Action.quoted(name))") }
        }
        if arguments.flag("json") {
            print(Format.json(status.actions))
            return ExitCode.success
        }
        print(text(status, context: context, now: .now), terminator: "")
        return ExitCode.success
    }

    /// The status as a terminal shows it: a problem writing the history first, then one row per
    /// action (every run in flight, one per key, and the last outcome), the rules around the runs
    /// (hooks, cooldowns), then how processes are tracked.
    static func text(_ status: BatonStatus, context: Context, now: Timestamp, width: Int? = Format.columns) -> String {
        var text = ""
        if let problem = status.storeProblem.map(Terminal.visible) {
            text += context.paint("the history cannot be written: \(problem)", .red) + "\n"
            text += "new triggers are refused, and what happens to runs in flight waits in batond's memory until it can\n\n"
        }
        let rows = status.actions.map(\.forTerminal).map { row($0, context: context, now: now) }
        text += Format.table(["ACTION", "STATE", "LAST"], rows, width: width)
        let lines = status.actions.map(\.forTerminal).flatMap { rules($0, now: now) }
        if !lines.isEmpty { text += "\nrules:\n" + lines.map { "  \($0)\n" }.joined() }
        if let tree = status.processTree.map(Terminal.visible) { text += context.paint("processes: \(tree)", .dim) + "\n" }
        return text
    }

    /// The runs a held pause (`baton pause --hold`) keeps queued, when it holds some, but those
    /// `listed` with a reason of their own (which say the pause on their line, `holding`):
    /// `queued (runs 5, 6) held by pause (alice: migrating db) until resumed`.
    static func held(_ action: ActionInfo, now: Timestamp, listed: Set<Int64> = []) -> String? {
        guard let pause = action.paused, pause.hold else { return nil }
        let runs = (action.inFlight ?? []).filter { $0.phase == .queued && !listed.contains($0.id) }.map(\.id)
        guard !runs.isEmpty else { return nil }
        let ids = runs.map(String.init).joined(separator: ", ")
        return "queued (run\(runs.count == 1 ? "" : "s") \(ids)) \(pause.holding(at: now))"
    }

    /// A queued run's line with its own reason, and the held pause's where one holds it too: one
    /// line a run, saying each reason (`queued (run 5) waiting for approval by group:ops, held by pause (…)`).
    static func holding(_ action: ActionInfo, now: Timestamp) -> (String) -> String {
        guard let pause = action.paused, pause.hold else { return { $0 } }
        let held = pause.holding(at: now)
        return { $0 + ", " + held }
    }

    private static func row(_ action: ActionInfo, context: Context, now: Timestamp) -> [String] {
        let live = action.inFlight ?? []
        // A run waiting for a lock says which, and who holds it; the others are counted.
        let waiting = live.filter { $0.phase == .queued && $0.waiting != nil }
        // A debounced run in its window says when it starts.
        let debouncing = live.filter { Format.debouncing($0, now: now) != nil }
        // A run waiting for the runs it needs says which.
        let needing = live.filter { $0.waiting == nil && Format.debouncing($0, now: now) == nil && Format.needing($0) != nil }
        // A run waiting for its approval says by whom and until when.
        let approving = live.filter { $0.waiting == nil && Format.debouncing($0, now: now) == nil && Format.needing($0) == nil
            && Format.approving($0) != nil }
        // A follow-up in a key's line is counted apart: `rules` lists the line with its places.
        let inLine = live.filter { $0.phase == .queued && $0.line != nil && $0.waiting == nil && Format.debouncing($0, now: now) == nil
            && Format.needing($0) == nil && Format.approving($0) == nil }.count
        let queued = live.filter { $0.phase == .queued }.count - waiting.count - debouncing.count - inLine - needing.count - approving.count
        // Every run in flight, one per key: an action with keyParams may have several.
        var parts = live.filter { $0.phase != .queued }.map { active in
            var part = "\(active.phase.rawValue) \(Format.duration(active, now: now)) (run \(active.id)"
            if active.key != active.action { part += ", " + active.key.dropFirst(active.action.count + 1) }
            part += ")"
            if let fraction = active.progress?.fraction { part += " \(Int(fraction * 100))%" }
            return part
        }
        let also = holding(action, now: now)
        parts += debouncing.map { also("\(Format.debouncing($0, now: now)!) (run \($0.id))") }
        parts += waiting.map { also("queued (run \($0.id)) \($0.waiting!.text)") }
        parts += needing.map { also("queued (run \($0.id)) \(Format.needing($0)!)") }
        parts += approving.map { also("queued (run \($0.id)) \(Format.approving($0)!)") }
        if let held = held(action, now: now, listed: Set((debouncing + waiting + needing + approving).map(\.id))) {
            parts.append(held)
        } else {
            if queued > 0 { parts.append("\(queued) queued") }
            if inLine > 0 { parts.append("\(inLine) in line") }
        }
        if let pause = action.paused { parts.insert(context.paint(pause.message(at: now).replacingEvery("\(action.name) is ", with: ""), .red), at: 0) }
        let state = parts.isEmpty ? "idle" : parts.joined(separator: "; ")
        var last = "never run"
        if let run = action.last {
            let word = context.paint(Format.phaseWord(run), phase: run.phase)
            last = "\(word) \(Format.age(run.endedAt ?? run.queuedAt, now: now)) (run \(run.id))"
            if run.phase == .failure, let error = run.error { last += ": \(error)" }
        }
        return [action.name + (action.removed == true ? " (removed from the config)" : ""), state, last]
    }
}
