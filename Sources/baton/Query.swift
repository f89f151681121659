import BatonCore
import BatonIPC
import BatonStore
import Foundation

/// History queries: through batond when it answers, otherwise straight from the database file,
/// opened read-only so the daemon's writes are never blocked and the file never changes.
enum Query {
    static func history(_ filter: HistoryFilter, _ context: Context) throws -> [RunSnapshot] {
        let filter = try valid(filter)
        return try viaDaemonOrFile(context, request: Request(op: .history, filter: filter), pick: { $0.runs ?? [] }) { try $0.runs(filter) }
    }

    static func stats(_ actions: [String], since: Timestamp?, _ context: Context) throws -> [ActionStats] {
        let filter = try valid(HistoryFilter(actions: actions, since: since))
        let request = Request(op: .stats, filter: filter)
        return try viaDaemonOrFile(context, request: request, pick: { $0.stats ?? [] }) { try $0.stats(actions: filter.actions, since: since) }
    }

    /// The filter as batond would take it (its lists as sets, within their caps), so that the
    /// history file is read with batond's bounds and refusals when batond is down.
    private static func valid(_ filter: HistoryFilter) throws -> HistoryFilter {
        do throws(BatonError) {
            return try filter.validated()
        } catch {
            throw Failure(code: ExitCode.of(errorCode: error.code), message: error.message, wire: WireError(error))
        }
    }

    static func denied(limit: Int, _ context: Context) throws -> [TriggerRecord] {
        let request = Request(op: .denied, filter: HistoryFilter(limit: limit))
        return try viaDaemonOrFile(context, request: request, pick: { $0.triggers ?? [] }) { try $0.denied(limit: limit) }
    }

    static func show(_ run: Int64, _ context: Context) throws -> RunDetail? {
        do {
            return try viaDaemonOrFile(context, request: Request(op: .show, run: run), pick: { $0.detail }) { try $0.run(run) }
        } catch let failure as Failure where failure.wire?.code == .unknownRun {
            return nil
        }
    }

    private static func viaDaemonOrFile<T>(_ context: Context, request: Request, pick: (Response) -> T,
                                           file: (History) throws -> T) throws -> T {
        if context.databasePath == nil {
            do {
                return pick(try context.call(request))
            } catch let failure as Failure where failure.code == ExitCode.unavailable {
                // batond is down: read the file that daemon keeps (see Context.fallbackDatabasePath).
            }
        }
        let path = context.databasePath ?? context.fallbackDatabasePath
        do {
            return try file(History.openReadOnly(path: path))
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "batond is not running and the history at \(path) cannot be read: \(error)",
                          hint: context.databasePath == nil ? "pass --database PATH" : nil)
        }
    }
}
