import BatonCore
import BatonIPC
import FoundationEssentials
import Glibc

@MainActor func main() -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())[...]
    var socket: String?
    var database: String?
    while let first = arguments.first, first.hasPrefix("-") {
        arguments.removeFirst()
        switch first {
        case "--socket", "--database":
            guard let value = arguments.popFirst() else { return fail(UsageError("\(first) needs a value")) }
            if first == "--socket" { socket = value } else { database = value }
        case "-h", "--help":
            print(CommandList.usage)
            return ExitCode.success
        case "--version":
            print("baton \(BatonVersion.current)")
            return ExitCode.success
        default:
            return fail(UsageError.unknown("option", first, among: ["--socket", "--database", "--help", "--version"]))
        }
    }
    guard let name = arguments.popFirst() else {
        print(CommandList.usage)
        return ExitCode.usage
    }
    if name == "help" {
        guard let topic = arguments.first else {
            print(CommandList.usage)
            return ExitCode.success
        }
        guard let command = CommandList.all.first(where: { $0.name == topic }) else {
            return fail(UsageError.unknown("command", topic, prefix: "baton help: ", among: CommandList.all.map(\.name)))
        }
        print(command.help, terminator: "")
        return ExitCode.success
    }
    guard let command = CommandList.all.first(where: { $0.name == name }) else {
        return fail(UsageError.unknown("command", name, among: CommandList.all.map(\.name) + ["help"]))
    }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(command.help, terminator: "")
        return ExitCode.success
    }
    do {
        let parsed = try command.parse(Array(arguments))
        let socketPath = parsed.value("socket") ?? socket ?? SocketPath.search()
        let context = Context(socketPath: socketPath, databasePath: parsed.value("database") ?? database)
        return try command.run(parsed, context)
    } catch {
        return fail(error)
    }
}

func fail(_ error: any Error) -> Int32 {
    let (text, code) = errorText(error)
    Stdio.error.write(Data(text.utf8))
    return code
}

/// The `Error:` (and `Try:`) lines for an error, as a terminal shows them (batond's messages and
/// the CLI's own quote params, names and argv), and the exit code.
func errorText(_ error: any Error) -> (text: String, code: Int32) {
    switch error {
    case let usage as UsageError:
        return ("Error: \(Terminal.visible(usage.description))\nTry: \(Terminal.visible(usage.hint ?? "baton --help"))\n", ExitCode.usage)
    case let failure as Failure:
        // batond's message may be several lines (a refused config, one problem a line): each is
        // shown on its own, indented under the first, with its control characters made visible.
        let lines = failure.message.split(separator: "\n", omittingEmptySubsequences: false).map { Terminal.visible(String($0)) }
        var text = "Error: " + lines.joined(separator: "\n  ") + "\n"
        if let hint = failure.hint { text += "Try: \(Terminal.visible(hint))\n" }
        return (text, failure.code)
    default:
        return ("Error: \(Terminal.visible("\(error)"))\n", ExitCode.software)
    }
}

exit(main())
