import Foundation

/// One line per event on stderr; with syslog priority prefixes when stderr is the journal.
enum Log {
    enum Level: Int {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    /// Whether stderr is connected to journald (systemd sets JOURNAL_STREAM to its device:inode).
    static let toJournal: Bool = {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var info = stat()
        guard parts.count == 2, fstat(2, &info) == 0 else { return false }
        return UInt64(parts[0]) == UInt64(info.st_dev) && UInt64(parts[1]) == UInt64(info.st_ino)
    }()

    static func write(_ level: Level, _ message: String) {
        let prefix = toJournal ? "<\(level.rawValue)>" : ""
        let line = prefix + message.replacingOccurrences(of: "\n", with: " | ") + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }

    static func error(_ message: String) { write(.error, "error: " + message) }
    static func warning(_ message: String) { write(.warning, "warning: " + message) }
    static func info(_ message: String) { write(.info, message) }
}
