import CBatonSystem
import Foundation

/// Runs an action's `exec` argv with `posix_spawn` in a new process group, capturing a bounded
/// tail of its output and the progress it writes to `BATON_PROGRESS_FD`.
public struct ExecRunner: Runner {
    /// How many bytes of output to keep per attempt.
    public var tailLimit: Int
    /// The daemon environment variables an action inherits; the rest are not passed on.
    public var inherited: [String: String]

    public init(tailLimit: Int = 64 * 1024, inherited: [String: String] = ExecRunner.defaultInherited()) {
        self.tailLimit = tailLimit
        self.inherited = inherited
    }

    /// PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ and TMPDIR of the daemon; a default PATH when it has none.
    public static func defaultInherited() -> [String: String] {
        var kept = ProcessInfo.processInfo.environment.filter { name, _ in
            ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"].contains(name) || name.hasPrefix("LC_")
        }
        if kept["PATH"] == nil { kept["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
        return kept
    }

    /// The environment of an attempt: inherited variables, the action's `env`, then Baton's own.
    public func environment(for job: Job) -> [String: String] {
        var env = inherited
        if let user = job.action.runAs {
            // Another identity gets a clean environment of its own: nothing of batond's leaks.
            env = ["HOME": user.home, "USER": user.user, "LOGNAME": user.user, "SHELL": user.shell,
                   "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
            for name in ["LANG", "TZ"] { if let value = inherited[name] { env[name] = value } }
        }
        for (name, value) in job.action.env { env[name] = value }
        env["BATON_ACTION"] = job.action.name
        env["BATON_RUN_ID"] = String(job.runID)
        env["BATON_ATTEMPT"] = String(job.attempt)
        env["BATON_PROGRESS_FD"] = "3"
        if let instance = job.instance { env["BATON_INSTANCE"] = instance }
        for (name, value) in job.params { env["BATON_PARAM_" + name.uppercased()] = value }
        return env
    }

    /// posix_spawn in the common case; fork and exec when the process takes another identity or umask.
    static func spawn(_ action: Action, _ argv: UnsafePointer<UnsafePointer<CChar>?>, _ envp: UnsafePointer<UnsafePointer<CChar>?>,
                      _ stdout: Int32, _ stderr: Int32, _ progress: Int32, _ pid: inout pid_t) -> Int32 {
        let cwd = action.cwd.map { strdup($0) } ?? nil
        defer { free(cwd) }
        guard action.runAs != nil || action.umask != nil else {
            return baton_spawn(argv, envp, cwd, stdout, stderr, progress, &pid)
        }
        let user = action.runAs
        let groups = user?.groups ?? []
        return groups.withUnsafeBufferPointer { list in
            baton_spawn_as(argv, envp, cwd, stdout, stderr, progress, user == nil ? 0 : 1, user?.uid ?? 0, user?.gid ?? 0,
                           list.baseAddress, list.count, action.umask == nil ? 0 : 1, mode_t(action.umask ?? 0), &pid)
        }
    }

    public func start(_ job: Job) -> any Attempt {
        guard !job.action.exec.isEmpty else {
            return FinishedAttempt(.failedToStart("action \(job.action.name) has nothing to exec"))
        }
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1], prog: [Int32] = [-1, -1]
        guard baton_pipe(&out) == 0, baton_pipe(&err) == 0, baton_pipe(&prog) == 0 else {
            let message = "cannot create pipes: \(String(cString: strerror(errno)))"
            for fd in out + err + prog where fd >= 0 { close(fd) }
            return FinishedAttempt(.failedToStart(message))
        }
        let env = environment(for: job).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let action = job.action
        let rc = withCStrings(action.exec) { argv in
            withCStrings(env) { envp in
                Self.spawn(action, argv, envp, out[1], err[1], prog[1], &pid)
            }
        }
        close(out[1]); close(err[1]); close(prog[1])
        guard rc == 0 else {
            close(out[0]); close(err[0]); close(prog[0])
            var message = "cannot run \(job.action.exec[0]): \(String(cString: strerror(rc)))"
            if rc == ENOENT, let cwd = job.action.cwd, access(cwd, F_OK) != 0 {
                message = "cannot run \(job.action.exec[0]): working directory \(cwd) does not exist"
            }
            return FinishedAttempt(.failedToStart(message))
        }
        let group = ProcessGroup(pgid: pid, identity: ProcessGroup.identity(of: pid))
        let attempt = ExecAttempt(pid: pid, group: group, killGrace: job.action.killGrace)
        let pipes = ExecAttempt.Pipes(stdout: out[0], stderr: err[0], progress: prog[0])
        let tailLimit = tailLimit
        let progress = job.progress
        let thread = Thread { attempt.pump(pipes, tailLimit: tailLimit, progress: progress) }
        thread.name = "baton-run-\(job.runID)"
        thread.stackSize = 256 * 1024
        thread.start()
        return attempt
    }
}

/// An attempt that ended before it began.
final class FinishedAttempt: Attempt {
    let result: AttemptResult
    init(_ result: AttemptResult) { self.result = result }
    var processGroup: ProcessGroup? { nil }
    func signal(_ signal: Int32) {}
    func wait() async -> AttemptOutcome { AttemptOutcome(result: result) }
}

/// A spawned process: its pipes are read by one thread, which reaps it when it exits.
final class ExecAttempt: Attempt {
    struct Pipes {
        var stdout: Int32
        var stderr: Int32
        var progress: Int32
    }

    private struct State {
        var reaped = false
        var outcome: AttemptOutcome?
        var waiters: [CheckedContinuation<AttemptOutcome, Never>] = []
    }

    let pid: pid_t
    let processGroup: ProcessGroup?
    /// Guards `reaped` so that no signal goes to the group after its leader is reaped and its
    /// pgid may be reused, and hands the outcome to the waiters.
    private let state = Locked(State())

    /// How long what is left of the group has after the leader exits, between SIGTERM and SIGKILL.
    let killGrace: Duration

    init(pid: pid_t, group: ProcessGroup, killGrace: Duration) {
        self.pid = pid
        self.processGroup = group
        self.killGrace = killGrace
    }

    func signal(_ signal: Int32) {
        state.withLock { state in
            if !state.reaped { kill(-pid, signal) }
        }
    }

    func wait() async -> AttemptOutcome {
        await withCheckedContinuation { continuation in
            let ready: AttemptOutcome? = state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Reads output and progress until the process exits, then reaps it and publishes the outcome.
    func pump(_ pipes: Pipes, tailLimit: Int, progress: @Sendable (Progress) -> Void) {
        let pidfd = baton_pidfd_open(pid)
        var tail = OutputTail(limit: tailLimit)
        var lastError = LastLine()
        var progressLine: [UInt8] = []
        var open: [Int32] = [pipes.stdout, pipes.stderr, pipes.progress]
        for fd in open { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }

        // Returns false at end of file or error.
        func drain(_ fd: Int32) -> Bool {
            while true {
                let n = read(fd, buffer.baseAddress, buffer.count)
                if n > 0 {
                    let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                    if fd == pipes.progress {
                        for byte in chunk {
                            if byte == UInt8(ascii: "\n") {
                                if let report = Progress(line: String(decoding: progressLine, as: UTF8.self)) { progress(report) }
                                progressLine.removeAll(keepingCapacity: true)
                            } else if progressLine.count < 1_024 {
                                progressLine.append(byte)
                            }
                        }
                    } else {
                        tail.append(chunk)
                        if fd == pipes.stderr { lastError.append(chunk) }
                    }
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            }
        }

        var exited = false
        while !exited {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0))
            // Without a pidfd (old kernel), poll the pipes and check for exit every 50 ms.
            let timeout: Int32 = pidfd >= 0 ? -1 : 50
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 && errno != EINTR { break }
            for entry in fds.dropLast() where entry.revents != 0 {
                if !drain(entry.fd) {
                    close(entry.fd)
                    open.removeAll { $0 == entry.fd }
                }
            }
            exited = pidfd >= 0 ? fds.last!.revents != 0 : baton_has_exited(pid) == 1
        }
        // The leader is gone but still a zombie, so its pgid cannot be reused yet: take what is
        // already in the pipes, stop what is left of the group, then reap.
        for fd in open {
            _ = drain(fd)
            close(fd)
        }
        if pidfd >= 0 { close(pidfd) }
        if !progressLine.isEmpty, let report = Progress(line: String(decoding: progressLine, as: UTF8.self)) { progress(report) }

        var exitCode: Int32 = -1, signal: Int32 = 0
        let outcome = state.withLock { state in
            kill(-pid, SIGTERM)
            _ = baton_reap(pid, &exitCode, &signal)
            state.reaped = true
            let result: AttemptResult = signal != 0
                ? .killed(signal: signal, lastErrorLine: lastError.line)
                : .exited(status: exitCode, lastErrorLine: lastError.line)
            return AttemptOutcome(result: result, output: tail.bytes, truncated: tail.isTruncated)
        }
        awaitGroupGone()
        let ready = state.withLock { state in
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in ready { waiter.resume(returning: outcome) }
    }

    /// Waits until no process is left in the group (the attempt ends only then, so that a
    /// replacing or queued run never overlaps it): SIGTERM was sent, SIGKILL follows after
    /// `killGrace`. While any member lives the kernel keeps the pgid reserved, so signalling it
    /// cannot reach a stranger. Zombies that nobody reaps would keep the group "alive": after
    /// SIGKILL the wait is bounded.
    private func awaitGroupGone() {
        guard kill(-pid, 0) == 0 else { return }
        let clock = ContinuousClock()
        let killAt = clock.now + killGrace
        var giveUpAt: ContinuousClock.Instant?
        while kill(-pid, 0) == 0 {
            let now = clock.now
            if giveUpAt == nil, now >= killAt {
                kill(-pid, SIGKILL)
                giveUpAt = now + .seconds(2)
            }
            if let giveUpAt, now >= giveUpAt { return }
            usleep(2_000)
        }
    }
}

/// Calls `body` with a NULL-terminated array of C strings.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let pointers = strings.map { strdup($0) }
    defer { for pointer in pointers { free(pointer) } }
    let array = pointers.map { UnsafePointer($0) } + [nil]
    return array.withUnsafeBufferPointer { body($0.baseAddress!) }
}
