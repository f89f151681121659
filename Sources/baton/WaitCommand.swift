import BatonClient
import BatonCore
import FoundationEssentials
import Glibc

/// `baton wait RUN`: attach to a run and exit with its outcome.
enum WaitCommand {
    static let spec = CommandSpec(
        name: "wait",
        abstract: "Wait for RUN to end and exit with its outcome code. The run may have been started with `baton run --detach`.",
        arguments: "RUN",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the run as JSON")],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let id = Int64(arguments.positionals[0]) else {
            throw UsageError("baton wait needs one RUN id (a number)")
        }
        let spinner = (!arguments.flag("json") && isatty(2) == 1) ? Spinner() : nil
        let run: RunSnapshot
        do {
            // batond restarting meanwhile: the wait is asked again of the new one (`BatonClient.wait(run:socket:)`).
            run = try context.call { [socket = context.socketPath] _ in
                try await BatonClient.wait(run: id, socket: socket) { update in spinner?.show(update.run) }
            }
        } catch {
            spinner?.clear()
            throw error
        }
        spinner?.clear()
        if arguments.flag("json") { print(Format.json(run)) }
        else { print(RunCommand.outcomeLine(run, shared: false, context: context)) }
        return ExitCode.of(run.phase)
    }
}
