import BatonCore
import CBatonSystem
import Glibc

/// Sends each line of every run's output to the journal as the action's own message, with the
/// run's fields (`journalctl BATON_RUN_ID=42`, `journalctl BATON_ACTION=deploy -f`). One
/// connected, non-blocking datagram socket: a journal that cannot keep up loses lines (counted),
/// never slows a run or the loop. The history keeps every byte regardless.
final class JournalSink: OutputLineSink {
    /// Where journald listens for native entries.
    static let defaultPath = "/run/systemd/journal/socket"

    private let fd: Int32
    private let path: String
    /// Lines the journal did not take (full socket buffer, journald gone).
    let lost = Locked(0)

    /// A sink on the socket at `path`, or nil when there is none to connect to (no journald).
    init?(path: String = JournalSink.defaultPath) {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard baton_unix_connect(fd, path) == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    func write(_ line: OutputLine) {
        let datagram = JournalDatagram.encode(JournalDatagram.fields(of: line))
        if send(datagram) { return }
        // A restarted journald listens on a new socket at the same path: connect to it and try
        // once more (a full buffer, EAGAIN, is not retried: the journal is behind). The old one is
        // gone (ECONNREFUSED), or shut for reading while something still holds it (EPIPE).
        let gone = errno == ECONNREFUSED || errno == ENOTCONN || errno == ENOENT || errno == EPIPE
        if gone, baton_unix_connect(fd, path) == 0, send(datagram) { return }
        lost.withLock { $0 += 1 }
    }

    private func send(_ datagram: [UInt8]) -> Bool {
        datagram.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) } >= 0
    }
}

extension Config {
    /// The journal sink batond's runs write their lines to: where journald listens, unless
    /// `output.journal` is false.
    var journalSink: JournalSink? { journal ? JournalSink() : nil }
}
