import BatonClient
import BatonCore
import FoundationEssentials
import Glibc

/// `baton watch`: follow transitions live, as they are committed.
enum WatchCommand {
    static let spec = CommandSpec(
        name: "watch",
        abstract: """
            Follow transitions live. Each one is printed as it is committed (like `journalctl -f`), until Ctrl-C.
            Across a restart or a stop of batond it watches again once the next batond answers (up to 30s;
            if none does, it exits 69), printing first what was committed meanwhile, each transition once.
            """,
        arguments: "[ACTION]",
        options: [
            OptionSpec(long: "json", short: nil, value: nil, help: "one JSON object per transition (NDJSON)"),
            OptionSpec(long: "utc", short: nil, value: nil, help: "show times in UTC instead of local time"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count <= 1 else { throw UsageError("baton watch takes at most one ACTION") }
        let json = arguments.flag("json"), utc = arguments.flag("utc")
        // Ctrl-C ends a watch; it is not an error.
        signal(SIGINT) { _ in _exit(0) }
        let action = arguments.positionals.first
        // batond restarting in place ends the watch with its last line: watched again, on the new batond.
        // A stop that a start follows (`systemctl restart`) ends it the same way: watched again
        // once batond is back, for at most `Reconnect.bound`.
        // Each watch again names the last transition printed: what was committed meanwhile is printed first.
        var told = false
        var reconnect = Reconnect()
        // Where the watch is: this thread's, carried into each call and back out.
        var cursor: WatchCursor?
        while true {
            let again = told
            // When the watch (again) began, told by its reader: batond was reached (a later loss
            // counts from then), and where the cursor is before any transition was printed.
            let begun = OneShot<Timestamp>()
            do {
                try context.call(carrying: &cursor) { client, cursor in
                    let updates = client.watch(action: action, after: cursor, started: {
                        begun.set(.now)
                        guard !again else { return }
                        Stdio.error.write(Data("watching \(action.map(Terminal.visible) ?? "every action"); Ctrl-C to stop\n".utf8))
                    }, skipped: { count in
                        Stdio.error.write(Data("\(count) transitions committed while batond was away are not shown (the oldest)\n".utf8))
                    })
                    for try await update in updates {
                        cursor.begin(at: begun.value)
                        cursor.saw(update)
                        guard let transition = update.transition else { continue }
                        let text = json ? Format.json(Event(run: update.run, transition: transition), pretty: false)
                                        : line(update.run, transition, utc: utc, context: context)
                        Stdio.output.write(Data((text + "\n").utf8))
                    }
                }
            } catch let failure as Failure {
                cursor.begin(at: begun.value)
                if begun.value != nil { reconnect.reached() }
                switch failure.refusal {
                case .shuttingDown?:
                    Stdio.error.write(Data("batond is stopping; watch ended\n".utf8))
                    return ExitCode.success
                case .unavailable? where failure.refusal?.endedByRestart == true:
                    told = true
                    reconnect.reached()
                    continue
                case .unavailable? where told:
                    // Told batond goes (its last line): it is waited for, up to the bound.
                    if reconnect.again() { continue }
                    Stdio.error.write(Data((Reconnect.gone(socket: context.socketPath, failure.message) + "\n").utf8))
                    return ExitCode.unavailable
                case nil where told && failure.code == ExitCode.unavailable:
                    if reconnect.again() { continue }
                    Stdio.error.write(Data((Reconnect.gone(socket: context.socketPath, failure.message) + "\n").utf8))
                    return ExitCode.unavailable
                case .unavailable?:
                    // The connection ended without a goodbye: batond went away.
                    break
                default:
                    throw failure
                }
            }
            break
        }
        Stdio.error.write(Data("batond closed the connection; watch ended\n".utf8))
        return ExitCode.success
    }

    struct Event: Encodable {
        var run: RunSnapshot
        var transition: Transition
    }

    /// `2026-11-29 14:03:07  run 12  deploy env=prod  queued → loading  (attempt 1)`
    static func line(_ run: RunSnapshot, _ transition: Transition, utc: Bool, context: Context) -> String {
        let run = run.forTerminal, transition = transition.forTerminal
        var text = "\(Format.time(transition.at, utc: utc))  run \(run.id)  \(run.key)  "
            + "\(transition.from?.rawValue ?? "new") → " + context.paint(transition.to.rawValue, phase: transition.to)
        let notes = Format.notes(transition.detail)
        if !notes.isEmpty { text += "  (" + notes.joined(separator: "; ") + ")" }
        return text
    }
}
