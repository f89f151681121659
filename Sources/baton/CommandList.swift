import BatonCore
import FoundationEssentials

/// Every command, in the order `baton --help` lists them, and the top-level help.
enum CommandList {
    /// Every command, in the order `baton --help` lists them.
    static let all: [CommandSpec] = [
        RunCommand.spec, StatusCommand.spec, HistoryCommand.spec, ShowCommand.spec, LogsCommand.spec, ArtifactsCommand.spec, SearchCommand.spec, StatsCommand.spec, WatchCommand.spec,
        CancelCommand.spec, PauseCommand.spec, PauseCommand.resumeSpec, ApproveCommand.spec, ApproveCommand.denySpec, ApproveCommand.listSpec, WaitCommand.spec, ActionsCommand.spec, DashboardCommand.spec, MetricsCommand.spec, SchedulesCommand.spec, ReloadCommand.spec, RestartCommand.spec, PruneCommand.spec, CompletionCommand.spec,
    ]

    static let usage = """
        Usage: baton COMMAND [options]   (--socket and --database may come anywhere)

        Trigger batond's actions and query their history.

        Commands:
        \(all.map { "  " + Format.padded($0.name, 12) + $0.summary }.joined(separator: "\n"))

        Global options:
          --socket PATH    batond's socket (default: $BATON_SOCKET, $XDG_RUNTIME_DIR/baton.sock if it exists,
                           else /run/baton/baton.sock, the system daemon's)
          --database PATH  read the history from this file instead of asking batond (when batond is down,
                           the file of the daemon the socket names is read: /var/lib/baton/history.sqlite
                           for the system daemon's)
          --version        print the version
          -h, --help       show this help; `baton COMMAND --help` for a command

        Exit codes:
          0   success
          1   the run failed (timeout included)
          2   bad usage or request: unknown action or run, bad param or policy
          3   the run was cancelled
          69  batond cannot be reached
          70  internal error in batond
          75  try again later: busy (a run is in flight), the action paused or rate limited, batond shutting down, or its history cannot be written (a full disk)
          77  forbidden
          130 interrupted: Ctrl-C while `baton run` waited (the run goes on)
        """
}
