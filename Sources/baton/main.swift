import BatonIPC
import Foundation

/// Every command, in the order `baton --help` lists them.
let commands: [CommandSpec] = [
    RunCommand.spec, StatusCommand.spec, HistoryCommand.spec, ShowCommand.spec, CancelCommand.spec,
    WaitCommand.spec, ActionsCommand.spec, ReloadCommand.spec, PruneCommand.spec,
]

let usage = """
    Usage: baton [--socket PATH] [--database PATH] COMMAND [options]

    Trigger batond's actions and query their history.

    Commands:
    \(commands.map { "  " + $0.name.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.abstract.split(separator: "\n")[0].split(separator: ".")[0] }.joined(separator: "\n"))

    Global options:
      --socket PATH    batond's socket (default: $BATON_SOCKET, $XDG_RUNTIME_DIR/baton.sock, or /run/baton/baton.sock as root)
      --database PATH  read the history from this file instead of asking batond
      --version        print the version
      -h, --help       show this help; `baton COMMAND --help` for a command

    Exit codes:
      0   success
      1   the run failed (timeout included)
      2   bad usage or request: unknown action or run, bad param or policy
      3   the run was cancelled
      69  batond cannot be reached
      70  internal error in batond
      75  busy: rejected because a run is in flight, or batond is shutting down
      77  forbidden
    """

@MainActor func main() -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())[...]
    var socket = ProcessInfo.processInfo.environment["BATON_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    var database: String?
    while let first = arguments.first, first.hasPrefix("-") {
        arguments.removeFirst()
        switch first {
        case "--socket", "--database":
            guard let value = arguments.popFirst() else { return fail(UsageError("\(first) needs a value")) }
            if first == "--socket" { socket = value } else { database = value }
        case "-h", "--help":
            print(usage)
            return ExitCode.success
        case "--version":
            print("baton \(BatonVersion.current)")
            return ExitCode.success
        default:
            return fail(UsageError("unknown option \(first)"))
        }
    }
    guard let name = arguments.popFirst() else {
        print(usage)
        return ExitCode.usage
    }
    if name == "help" {
        if let topic = arguments.first, let command = commands.first(where: { $0.name == topic }) { print(command.help, terminator: "") }
        else { print(usage) }
        return ExitCode.success
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        return fail(UsageError("unknown command \(name)"))
    }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(command.help, terminator: "")
        return ExitCode.success
    }
    let context = Context(socketPath: socket ?? SocketPath.default(), databasePath: database)
    do {
        let parsed = try command.parse(Array(arguments))
        return try command.run(parsed, context)
    } catch {
        return fail(error)
    }
}

func fail(_ error: any Error) -> Int32 {
    let stderr = FileHandle.standardError
    switch error {
    case let usage as UsageError:
        stderr.write(Data("Error: \(usage.description)\nTry: baton --help\n".utf8))
        return ExitCode.usage
    case let failure as Failure:
        var text = "Error: \(failure.message)\n"
        if let hint = failure.hint { text += "Try: \(hint)\n" }
        stderr.write(Data(text.utf8))
        return failure.code
    default:
        stderr.write(Data("Error: \(error)\n".utf8))
        return ExitCode.software
    }
}

exit(main())
