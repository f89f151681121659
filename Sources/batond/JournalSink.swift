import BatonCore
import CBatonSystem
import Glibc

/// Sends each line of every run's output to the journal as the action's own message, with the
/// run's fields (`journalctl BATON_RUN_ID=42`, `journalctl BATON_ACTION=deploy -f`). One
/// connected, non-blocking datagram socket: a journal that cannot keep up loses lines (counted),
/// never slows a run or the loop. The history keeps every byte regardless. A run's lines wait
/// (bounded) for its `loading` line: the transition log tells the sink when it has logged one.
final class JournalSink: OutputLineSink {
    /// Where journald listens for native entries (`BATON_JOURNAL_SOCKET` overrides it, for tests).
    static var defaultPath: String { Log.journalSocket }

    private let fd: Int32
    private let path: String
    /// Lines the journal did not take (full socket buffer, journald gone).
    let lost = Counter()
    /// Which runs' lines wait for their `loading` line: the loop adds lines, the log's worker
    /// releases them, so a lock (this one) guards it.
    private let gate: Locked<JournalGate>

    /// A sink on the socket at `path`, or nil when there is none to connect to (no journald).
    init?(path: String = JournalSink.defaultPath, gate: JournalGate = JournalGate()) {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard baton_unix_connect(fd, path) == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.path = path
        self.gate = Locked(gate)
    }

    deinit { close(fd) }

    func launched(run: Int64, attempt: Int) {
        gate.withLock { $0.launched(run: run, attempt: attempt) }
    }

    func write(_ line: OutputLine) {
        switch gate.withLock({ $0.line(line) }) {
        case .send: send(line)
        case .held: break
        case .dropped: lost.add()
        }
    }

    /// The transition log has logged a transition of the run (on its worker): after `loading`, the
    /// lines its attempt wrote meanwhile go; before a terminal phase, all it held (the caller logs
    /// that line after this returns).
    func logged(run: Int64, phase: Phase, attempt: Int?) {
        if phase.isTerminal {
            send(gate.withLock { $0.ending(run: run) }, of: run)
            return
        }
        guard phase == .loading else { return }
        var release = gate.withLock { $0.logged(run: run, loading: attempt ?? 1) }
        while !release.lines.isEmpty || release.dropped > 0 {
            send(release, of: run)
            release = gate.withLock { $0.released(run: run) }
        }
    }

    /// Sends released lines on the log's worker, which may wait for journald to take them (a burst
    /// of held lines would otherwise overflow its queue): a second at most, once per release, so
    /// that a journal that does not read never holds the transition log for long.
    private func send(_ release: JournalGate.Release, of run: Int64) {
        var patient = true
        for line in release.lines where !send(line, patient: patient) { patient = false }
        guard release.dropped > 0, let first = release.lines.first else { return }
        var note = first
        note.stream = .stderr
        note.bytes = Array("baton: \(release.dropped) more lines of this run were not sent to the journal while its start was being recorded (the history has them)".utf8)
        send(note, patient: patient)
    }

    /// Sends one line; false when it was lost.
    @discardableResult
    private func send(_ line: OutputLine, patient: Bool = false) -> Bool {
        let datagram = JournalDatagram.encode(JournalDatagram.fields(of: line))
        if send(datagram) { return true }
        if patient, errno == EAGAIN {
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if poll(&ready, 1, 1_000) > 0, send(datagram) { return true }
        }
        // A restarted journald listens on a new socket at the same path: connect to it and try
        // once more (a full buffer, EAGAIN, is not retried: the journal is behind). The old one is
        // gone (ECONNREFUSED), or shut for reading while something still holds it (EPIPE).
        let gone = errno == ECONNREFUSED || errno == ENOTCONN || errno == ENOENT || errno == EPIPE
        if gone, baton_unix_connect(fd, path) == 0, send(datagram) { return true }
        lost.add()
        return false
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
