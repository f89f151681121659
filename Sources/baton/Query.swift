import BatonClient
import BatonCore
import BatonStore
import FoundationEssentials
import Glibc

/// History queries: through batond when it answers, otherwise straight from the database file,
/// opened read-only so the daemon's writes are never blocked and the file never changes.
enum Query {
    static func history(_ filter: HistoryFilter, _ context: Context) throws -> [RunSnapshot] {
        let filter = try valid(filter)
        return try viaDaemonOrFile(context, daemon: .history(filter)) { try $0.runs(filter) }
    }

    static func stats(_ actions: [String], since: Timestamp?, _ context: Context) throws -> [ActionStats] {
        let filter = try valid(HistoryFilter(actions: actions, since: since))
        return try viaDaemonOrFile(context, daemon: .stats(filter)) { try $0.stats(actions: filter.actions, since: since) }
    }

    static func search(_ text: String, _ filter: HistoryFilter, _ context: Context) throws -> SearchResult {
        let filter = try valid(filter)
        return try viaDaemonOrFile(context, daemon: .search(text, filter)) { try $0.search(text, filter) }
    }

    /// The filter as batond would take it (its lists as sets, within their caps), so that the
    /// history file is read with batond's bounds and refusals when batond is down.
    private static func valid(_ filter: HistoryFilter) throws -> HistoryFilter {
        do throws(BatonError) {
            return try filter.validated()
        } catch {
            throw Failure(BatonClientError(WireError(error)))
        }
    }

    static func events(_ filter: HistoryFilter, _ context: Context) throws -> [ActionEvent] {
        let filter = try valid(filter)
        return try viaDaemonOrFile(context, daemon: .events(filter)) { try $0.events(filter) }
    }

    static func denied(limit: Int, _ context: Context) throws -> [TriggerRecord] {
        try viaDaemonOrFile(context, daemon: .denied(limit: limit)) { try $0.denied(limit: limit) }
    }

    static func show(_ run: Int64, _ context: Context) throws -> RunDetail? {
        do {
            return try viaDaemonOrFile(context, daemon: BatonQuery<RunDetail>.show(run).map(Optional.some)) { try $0.run(run) }
        } catch let failure as Failure {
            if case .unknownRun = failure.refusal { return nil }
            throw failure
        }
    }

    /// A run's kept files and notices (nil: no such run), from batond or the file.
    static func artifacts(_ run: Int64, _ context: Context) throws -> ArtifactList? {
        do {
            return try viaDaemonOrFile(context, daemon: BatonQuery<ArtifactList>.artifacts(run: run).map(Optional.some)) { history in
                try history.run(run) == nil ? nil : try history.artifacts(of: run)
            }
        } catch let failure as Failure {
            if case .unknownRun = failure.refusal { return nil }
            throw failure
        }
    }

    /// One piece of a run's artifact (nil: the run kept none of that name), from batond or the file.
    static func artifact(_ run: Int64, _ name: String, from: Int64, _ context: Context) throws -> ArtifactPiece? {
        try viaDaemonOrFile(context, daemon: BatonQuery<ArtifactPiece>.artifact(run: run, name: name, from: from).map(Optional.some)) { history in
            try history.artifact(of: run, named: name, from: from, maxBytes: ArtifactPiece.maxBytes)
        }
    }

    private static func viaDaemonOrFile<T>(_ context: Context, daemon: BatonQuery<T>, file: (History) throws -> T) throws -> T {
        if context.databasePath == nil {
            do {
                return try context.ask(daemon)
            } catch let failure as Failure where failure.code == ExitCode.unavailable {
                // batond is down: read the file that daemon keeps (see Context.fallbackDatabasePath).
            }
        }
        let path = context.databasePath ?? context.fallbackDatabasePath
        do {
            return try file(History.openReadOnly(path: path))
        } catch {
            let denied = access(path, R_OK) != 0 && errno == EACCES
            throw Failure(code: ExitCode.unavailable, message: "batond is not running and the history at \(path) cannot be read: \(error)",
                          hint: hint(reading: path, denied: denied, context))
        }
    }

    /// What to try when batond is down and its history file cannot be read: batond reads it for
    /// anyone it lets in, so start it; where the file is there but not this user's to read, sudo.
    private static func hint(reading path: String, denied: Bool, _ context: Context) -> String? {
        let again = (["sudo", "baton"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
        if denied { return "\(context.startAdvice) (it reads the history for you), or read the file as a user who may: \(again)" }
        return context.databasePath == nil ? "\(context.startAdvice), or pass --database PATH" : nil
    }
}
