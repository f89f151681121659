import BatonClient
import BatonCore

/// `baton reload`: make batond read its config again.
enum ReloadCommand {
    static let spec = CommandSpec(
        name: "reload",
        abstract: "Make batond read its config again (as SIGHUP does). A config with errors is refused whole and the old one stays.",
        arguments: "",
        options: [],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        try context.call { try await $0.reload() }
        print("reloaded")
        return ExitCode.success
    }
}
