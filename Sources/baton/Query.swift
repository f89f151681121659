import BatonIPC
import BatonStore
import Foundation

/// History queries: through batond when it answers, otherwise straight from the database file,
/// opened read-only so the daemon's writes are never blocked and the file never changes.
enum Query {
    static func history(_ filter: HistoryFilter, _ context: Context) throws -> [RunSnapshotList] {
        try viaDaemonOrFile(context, request: Request(op: .history, filter: filter), pick: { $0.runs ?? [] }) { try $0.runs(filter) }
    }

    static func show(_ run: Int64, _ context: Context) throws -> RunDetail? {
        do {
            return try viaDaemonOrFile(context, request: Request(op: .show, run: run), pick: { $0.detail }) { try $0.run(run) }
        } catch let failure as Failure where failure.wire?.code == "unknown_run" {
            return nil
        }
    }

    private static func viaDaemonOrFile<T>(_ context: Context, request: Request, pick: (Response) -> T,
                                           file: (History) throws -> T) throws -> T {
        if context.databasePath == nil {
            do {
                return pick(try context.call(request))
            } catch let failure as Failure where failure.code == ExitCode.unavailable {
                // batond is down: read the file at its default path.
            }
        }
        let path = context.databasePath ?? DefaultDatabase.path
        do {
            return try file(History.openReadOnly(path: path))
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "batond is not running and the history at \(path) cannot be read: \(error)",
                          hint: "pass --database PATH")
        }
    }
}

typealias RunSnapshotList = BatonCore.RunSnapshot

/// The database path batond uses by default, for reading the history without it.
enum DefaultDatabase {
    static var path: String {
        let env = ProcessInfo.processInfo.environment
        if getuid() == 0 { return "/var/lib/baton/history.sqlite" }
        if let state = env["XDG_STATE_HOME"], !state.isEmpty { return state + "/baton/history.sqlite" }
        return NSHomeDirectory() + "/.local/state/baton/history.sqlite"
    }
}

import BatonCore
