import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc

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

    /// Writes a message; each of its lines is a line of the log (the first as given, the rest
    /// indented), each with the priority prefix when stderr is the journal.
    static func write(_ level: Level, _ message: String) {
        Stdio.error.write(Data(text(level, message, journal: toJournal)))
    }

    /// A message as the log's lines: the first as given, the rest indented by two spaces, each
    /// with `<PRIORITY>` first when `journal`. Byte by byte: one buffer, no split and join.
    static func text(_ level: Level, _ message: String, journal: Bool) -> [UInt8] {
        let prefix: [UInt8] = journal ? Array("<\(level.rawValue)>".utf8) : []
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.utf8.count + prefix.count + 1)
        bytes += prefix
        for byte in message.utf8 {
            bytes.append(byte)
            if byte == UInt8(ascii: "\n") { bytes += prefix + [UInt8(ascii: " "), UInt8(ascii: " ")] }
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// journald's native socket (`BATON_JOURNAL_SOCKET` overrides it, for tests).
    static let journalSocket: String = ProcessInfo.processInfo.environment["BATON_JOURNAL_SOCKET"] ?? "/run/systemd/journal/socket"

    /// A message with structured fields (`BATON_ACTION=deploy`, …): sent to journald's native
    /// socket when stderr is the journal, so that `journalctl BATON_ACTION=deploy` finds it;
    /// otherwise (or if that fails) the plain line on stderr.
    static func event(_ level: Level, _ message: String, fields: @autoclosure () -> [String: String]) {
        if toJournal {
            var all = fields()
            all["MESSAGE"] = message
            all["PRIORITY"] = String(level.rawValue)
            all["SYSLOG_IDENTIFIER"] = "batond"
            let datagram = NativeJournal.encode(all)
            let sent = datagram.withUnsafeBytes { baton_unix_sendto(journalSocket, $0.baseAddress, $0.count) }
            if sent == 0 { return }
        }
        write(level, message)
    }

    static func error(_ message: String) { write(.error, "error: " + message) }
    static func warning(_ message: String) { write(.warning, "warning: " + message) }
    static func info(_ message: String) { write(.info, message) }
}

/// journald's native protocol: `KEY=value` lines, or for a value with a newline, the key, a
/// newline, the value's length as 64-bit little endian, the value and a newline.
enum NativeJournal {
    static func encode(_ fields: [String: String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            let name = Array(key.utf8), data = Array(value.utf8)
            if data.contains(10) {
                bytes += name + [10]
                var length = UInt64(data.count).littleEndian
                withUnsafeBytes(of: &length) { bytes += $0 }
                bytes += data + [10]
            } else {
                bytes += name + [61] + data + [10]
            }
        }
        return bytes
    }
}
