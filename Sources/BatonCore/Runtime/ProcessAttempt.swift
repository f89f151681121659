import CBatonSystem
import Foundation

/// A spawned process and its process group, served by the shared `Reactor`: its output and
/// progress pipes and its pidfd are watched there, so that any number of attempts costs one
/// thread. The attempt ends, and says so once, when the whole group is gone.
///
/// Signals go to the group only while its pgid is reserved: before the leader is reaped (a zombie
/// leader holds it), or after, while members remain.
final class ProcessAttempt: Attempt, @unchecked Sendable {
    let pid: pid_t
    let killGrace: Duration
    private let events: @Sendable (AttemptEvent) -> Void
    private let reactor: Reactor
    /// Guards `state`: touched by the reactor's handlers and by `stop` from any thread.
    private let lock = NSLock()
    private var state: State

    private struct State {
        var pipes: Pipes
        var pidfd: Int32
        var tail: OutputTail
        var lastError = LastLine()
        var progressLine: [UInt8] = []
        /// The leader's status, once reaped.
        var leader: (exitCode: Int32, signal: Int32)?
        /// When SIGKILL goes to the group (a stop's grace, or the grace after the leader exited).
        var killAt: ContinuousClock.Instant?
        var killed = false
        var ended = false
    }

    struct Pipes {
        var stdout: Int32
        var stderr: Int32
        var progress: Int32
        var open: [Int32] { [stdout, stderr, progress].filter { $0 >= 0 } }
    }

    /// The known leaders, so that the orphan sweep never reaps one (its status is the attempt's).
    /// The runner adds each under this lock in the same step as its spawn; `leaderExited` removes it.
    static let leaders = Locked<Set<pid_t>>([])

    init(pid: pid_t, pipes: Pipes, tailLimit: Int, killGrace: Duration, reactor: Reactor,
         events: @escaping @Sendable (AttemptEvent) -> Void) {
        self.pid = pid
        self.killGrace = killGrace
        self.events = events
        self.reactor = reactor
        state = State(pipes: pipes, pidfd: baton_pidfd_open(pid), tail: OutputTail(limit: tailLimit))
    }

    /// Starts watching: pipes and pidfd on the reactor (or, without pidfd, a check every 50 ms).
    func begin() {
        let (pipes, pidfd) = lock.withLock { (state.pipes, state.pidfd) }
        for fd in pipes.open {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            reactor.watch(fd) { [self] _ in readable(fd) }
        }
        if pidfd >= 0 {
            reactor.watch(pidfd) { [self] _ in leaderExited() }
        } else {
            pollForExit()
        }
    }

    func stop(grace: Duration) {
        let deadline = ContinuousClock.now + grace
        let signalled = lock.withLock { () -> Bool in
            guard !state.ended, !state.killed else { return false }
            kill(-pid, SIGTERM)
            state.killAt = min(state.killAt ?? deadline, deadline)
            return true
        }
        if signalled { reactor.after(grace) { [self] in forceKill() } }
    }

    private func forceKill() {
        lock.withLock {
            guard !state.ended, !state.killed, let killAt = state.killAt, killAt <= .now else { return }
            kill(-pid, SIGKILL)
            state.killed = true
        }
    }

    private func pollForExit() {
        reactor.after(.milliseconds(50)) { [self] in
            // -1 (no such child) must end the attempt too, or it would be polled for ever.
            if baton_has_exited(pid) != 0 { leaderExited() } else { pollForExit() }
        }
    }

    // MARK: Output

    private func readable(_ fd: Int32) {
        let (open, progress) = lock.withLock { drain(fd) }
        for report in progress { events(.progress(report)) }
        if !open {
            reactor.remove(fd)
            close(fd)
        }
    }

    /// Reads what `fd` has; returns whether it is still open, and the progress lines completed.
    /// Called with the lock held.
    private func drain(_ fd: Int32) -> (open: Bool, progress: [Progress]) {
        var reports: [Progress] = []
        let buffer = Self.buffer
        while true {
            let n = read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                if fd == state.pipes.progress {
                    for byte in chunk {
                        if byte == UInt8(ascii: "\n") {
                            if let report = Progress(line: String(decoding: state.progressLine, as: UTF8.self)) { reports.append(report) }
                            state.progressLine.removeAll(keepingCapacity: true)
                        } else if state.progressLine.count < 1_024 {
                            state.progressLine.append(byte)
                        }
                    }
                } else {
                    state.tail.append(chunk)
                    if fd == state.pipes.stderr { state.lastError.append(chunk) }
                }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            let open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            if !open { forget(fd) }
            return (open, reports)
        }
    }

    private func forget(_ fd: Int32) {
        if state.pipes.stdout == fd { state.pipes.stdout = -1 }
        if state.pipes.stderr == fd { state.pipes.stderr = -1 }
        if state.pipes.progress == fd { state.pipes.progress = -1 }
    }

    /// One read buffer for every attempt: handlers run only on the reactor's thread, one at a time.
    private nonisolated(unsafe) static let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)

    // MARK: Exit

    /// The leader is a zombie, so its pgid is still reserved: take what is in the pipes, ask the
    /// rest of the group to stop, reap the leader, then wait for the group to empty.
    private func leaderExited() {
        var reports: [Progress] = []
        let pidfd = lock.withLock { () -> Int32 in
            let pidfd = state.pidfd
            state.pidfd = -1
            for fd in state.pipes.open {
                let fd = fd
                reports += drain(fd).progress
                reactor.remove(fd)
                close(fd)
            }
            state.pipes = Pipes(stdout: -1, stderr: -1, progress: -1)
            if !state.progressLine.isEmpty, let report = Progress(line: String(decoding: state.progressLine, as: UTF8.self)) {
                reports.append(report)
            }
            var exitCode: Int32 = -1, signal: Int32 = 0
            kill(-pid, SIGTERM)
            _ = baton_reap(pid, &exitCode, &signal)
            state.leader = (exitCode, signal)
            state.killAt = min(state.killAt ?? .now + killGrace, .now + killGrace)
            return pidfd
        }
        Self.leaders.withLock { _ = $0.remove(pid) }
        if pidfd >= 0 {
            reactor.remove(pidfd)
            close(pidfd)
        }
        for report in reports { events(.progress(report)) }
        checkGroup(giveUpAt: nil)
    }

    /// Ends the attempt once no process is left in the group: members that are batond's children
    /// (it adopts orphans as a subreaper) are reaped here; SIGKILL follows at `killAt`. Zombies
    /// that nobody reaps would keep the group "alive": after SIGKILL the wait is bounded.
    private func checkGroup(giveUpAt: ContinuousClock.Instant?) {
        _ = baton_reap_group(pid)
        var giveUpAt = giveUpAt
        let gone = lock.withLock { () -> Bool in
            if kill(-pid, 0) != 0 { return true }
            let now = ContinuousClock.now
            if !state.killed, let killAt = state.killAt, now >= killAt {
                kill(-pid, SIGKILL)
                state.killed = true
            }
            if state.killed, giveUpAt == nil { giveUpAt = now + .seconds(2) }
            return giveUpAt.map { now >= $0 } ?? false
        }
        if gone { return end() }
        let deadline = giveUpAt
        reactor.after(.milliseconds(2)) { [self] in checkGroup(giveUpAt: deadline) }
    }

    private func end() {
        let outcome = lock.withLock { () -> AttemptOutcome? in
            guard !state.ended, let leader = state.leader else { return nil }
            state.ended = true
            let result: AttemptResult = leader.signal != 0
                ? .killed(signal: leader.signal, lastErrorLine: state.lastError.line)
                : .exited(status: leader.exitCode, lastErrorLine: state.lastError.line)
            return AttemptOutcome(result: result, output: state.tail.bytes, truncated: state.tail.isTruncated)
        }
        if let outcome { events(.ended(outcome)) }
    }
}

extension ProcessAttempt {
    /// Makes batond the reaper of its actions' orphans (PR_SET_CHILD_SUBREAPER), so that what is
    /// left of a process group is reaped at once instead of lingering as zombies of init, and
    /// sweeps orphans outside any attempt's group every second. For the daemon only: in a process
    /// that has other children (a test runner with Foundation's `Process`), it would take theirs.
    static func adoptOrphans(on reactor: Reactor = .shared) {
        guard baton_set_subreaper() == 0 else { return }
        sweepOrphans(on: reactor)
    }

    /// Reaps `pid` unless it leads an attempt (whose status that attempt reaps); says whether it did.
    static func reapIfOrphan(_ pid: pid_t) -> Bool {
        leaders.withLock { leaders in !leaders.contains(pid) && baton_reap_nohang(pid) == 1 }
    }

    private static func sweepOrphans(on reactor: Reactor) {
        reactor.after(.seconds(1)) {
            while case let child = baton_waitable_child(), child > 0, reapIfOrphan(child) {}
            sweepOrphans(on: reactor)
        }
    }
}

extension ExecRunner {
    /// SIGKILLs the process group of every attempt running now (a fleet host that lost its lease
    /// fences itself with it); returns how many groups were signalled.
    @discardableResult
    public static func killAllGroups() -> Int {
        let groups = ProcessAttempt.leaders.withLock { $0 }
        for pgid in groups { kill(-pgid, SIGKILL) }
        return groups.count
    }
}
