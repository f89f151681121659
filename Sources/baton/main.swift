import BatonCore
import BatonIPC
import Foundation

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
            print(CommandList.usage)
            return ExitCode.success
        case "--version":
            print("baton \(BatonVersion.current)")
            return ExitCode.success
        default:
            return fail(UsageError("unknown option \(first)"))
        }
    }
    guard let name = arguments.popFirst() else {
        print(CommandList.usage)
        return ExitCode.usage
    }
    if name == "help" {
        if let topic = arguments.first, let command = CommandList.all.first(where: { $0.name == topic }) { print(command.help, terminator: "") }
        else { print(CommandList.usage) }
        return ExitCode.success
    }
    guard let command = CommandList.all.first(where: { $0.name == name }) else {
        return fail(UsageError("unknown command \(name)"))
    }
    if arguments.contains("--help") || arguments.contains("-h") {
        print(command.help, terminator: "")
        return ExitCode.success
    }
    do {
        let parsed = try command.parse(Array(arguments))
        let socketPath = parsed.value("socket") ?? socket ?? SocketPath.forClient()
        let context = Context(socketPath: socketPath, databasePath: parsed.value("database") ?? database)
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
