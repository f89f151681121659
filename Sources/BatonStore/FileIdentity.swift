import BatonCore
import CSQLite
import FoundationEssentials
import Glibc

/// Which file a path named when the store opened it (device and inode), to notice the file being
/// deleted (`rm history.sqlite*`) or replaced while batond runs: SQLite would go on writing to
/// the unlinked file, and the history would be lost at the next start.
struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// What is wrong with the path now, or nil when it still names this file. One `stat` call.
    func problem(at path: String) -> String? {
        guard let now = FileIdentity(path: path) else { return "the history file \(path) was deleted while batond ran" }
        return now == self ? nil : "the history file \(path) was replaced by another file while batond ran"
    }

    func isMissing(_ path: String) -> Bool { FileIdentity(path: path) == nil }
}

extension Store {
    /// Refuses a database batond cannot write (an immutable file, a read-only mount, permissions,
    /// or `-wal`/`-shm` files it cannot write, which made SQLite die of SIGBUS): better not to
    /// start than to say "ready" and fail every trigger.
    static func refuseReadOnly(_ connection: Connection, path: String) throws(StoreError) {
        var reasons: [String] = []
        if connection.sqlite.sqlite3_db_readonly(connection.handle, "main") == 1 { reasons.append("SQLite opened it read-only") }
        for file in [path, path + "-wal", path + "-shm"] where access(file, F_OK) == 0 && access(file, W_OK) != 0 {
            reasons.append("\(file): \(String(cString: strerror(errno)))")
        }
        let directory = path.parentPath
        if access(directory.isEmpty ? "." : directory, W_OK) != 0 {
            reasons.append("its directory \(directory): \(String(cString: strerror(errno)))")
        }
        guard reasons.isEmpty else { throw .readOnly(path: path, reasons.joined(separator: "; ")) }
    }
}
