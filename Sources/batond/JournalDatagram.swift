import BatonCore

/// One entry in journald's native protocol (systemd's `JOURNAL_NATIVE_PROTOCOL`): fields as
/// `NAME=value` lines, or, for a value that holds a newline (or any byte a line cannot carry),
/// `NAME`, a newline, the value's length as 64-bit little-endian, the value and a newline.
enum JournalDatagram {
    /// The datagram for these fields, in order. Names are journald's: upper-case letters, digits
    /// and underscores, not starting with an underscore (those are the journal's trusted fields).
    static func encode(_ fields: [(name: String, value: [UInt8])]) -> [UInt8] {
        var datagram: [UInt8] = []
        datagram.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count + 10 })
        for (name, value) in fields {
            precondition(isValidName(name), "not a journal field name: \(name)")
            datagram += Array(name.utf8)
            if value.contains(UInt8(ascii: "\n")) {
                datagram.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(value.count).littleEndian) { datagram += $0 }
                datagram += value
            } else {
                datagram.append(UInt8(ascii: "="))
                datagram += value
            }
            datagram.append(UInt8(ascii: "\n"))
        }
        return datagram
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, first != UInt8(ascii: "_"), bytes.count <= 64, !(48...57).contains(first) else { return false }
        return bytes.allSatisfy { (65...90).contains($0) || (48...57).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// The fields of one line of a run's output: the action's own message (its name as the
    /// identifier, its leader's pid as `SYSLOG_PID`), stdout at priority info (6), stderr at warning (4).
    static func fields(of line: OutputLine) -> [(name: String, value: [UInt8])] {
        var fields: [(name: String, value: [UInt8])] = [
            ("MESSAGE", line.bytes),
            ("PRIORITY", Array((line.stream == .stdout ? "6" : "4").utf8)),
            ("SYSLOG_IDENTIFIER", Array(line.action.utf8)),
        ]
        if let pid = line.pid { fields.append(("SYSLOG_PID", Array(String(pid).utf8))) }
        return fields + [
            ("BATON_RUN_ID", Array(String(line.runID).utf8)),
            ("BATON_ACTION", Array(line.action.utf8)),
            ("BATON_KEY", Array(line.key.utf8)),
            ("BATON_STREAM", Array(line.stream.rawValue.utf8)),
        ]
    }
}
