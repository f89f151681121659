import Foundation

/// The fields of a process's `/proc/PID/status` (or one thread's, `/proc/PID/task/TID/status`):
/// `VmRSS:\t  1234 kB`, `SigBlk:\t0000000000000000`, `voluntary_ctxt_switches:\t42`.
enum ProcStatus {
    /// The first word after `field:`; nil when the process is gone or has no such field.
    static func word(_ field: String, of pid: Int32, thread: Int32? = nil) -> Substring? {
        let path = thread.map { "/proc/\(pid)/task/\($0)/status" } ?? "/proc/\(pid)/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
        return line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first
    }

    /// A number: memory in KiB (`VmRSS`, `VmHWM`), a counter as it is.
    static func number(_ field: String, of pid: Int32, thread: Int32? = nil) -> Int? {
        word(field, of: pid, thread: thread).flatMap { Int($0) }
    }

    /// A signal set (`SigBlk`, `SigPnd`, `SigIgn`, `SigCgt`): bit `n - 1` is signal `n`.
    static func signals(_ field: String, of pid: Int32) -> UInt64? {
        word(field, of: pid).flatMap { UInt64($0, radix: 16) }
    }
}
