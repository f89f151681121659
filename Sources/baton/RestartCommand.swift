import BatonClient
import BatonCore
import FoundationEssentials
import Glibc

/// `baton restart`: make batond restart in place (as SIGUSR2 does).
enum RestartCommand {
    static let spec = CommandSpec(
        name: "restart",
        abstract: """
            Make batond restart in place (as SIGUSR2 does): it hands the runs that survive restarts over, then executes \
            its binary again from disk (an upgraded package's), same pid, its socket kept open: requests sent meanwhile \
            wait and are answered by the new batond, which adopts the runs. Needs the admin right.
            """,
        arguments: "",
        options: [],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw UsageError("baton restart takes no arguments") }
        // batond not reached: a failure (exit 69), not a restart.
        let client = try context.oneShotClient()
        do {
            _ = try client.ask(.restart)
        } catch let error as BatonClientError {
            // The answer and the restart race: a connection closed once asked went with the restart;
            // one batond did not take (`.restarting`) met a restart already under way.
            switch error {
            case .unavailable, .restarting: break
            default: throw Failure(error)
            }
        }
        print("restarting in place")
        return ExitCode.success
    }
}
