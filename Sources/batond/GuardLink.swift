import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc
import Synchronization

/// batond's side of the guard of its runs (`RunGuard`): one guard per incarnation. It starts
/// the guard, watches the guard's pidfd on the reactor and starts another when it dies (and, in
/// case the reactor has not heard yet, looks before each run starts), sends it the lease's
/// deadline after each renewal, and hands the guard's pidfd over the exec of a fenced start so
/// that the new incarnation ends it before it starts its own. Its state is the loop's (no lock):
/// `start` and `renewed` hand their work to the loop; `handOver`, just before an exec on any
/// thread, reads only the guard's pidfd, which the loop publishes as an atomic.
final class GuardLink: Sendable {
    private struct Guard {
        var pid: pid_t
        var pidfd: Int32
        /// batond's end of the pipe (non-blocking, closed on exec).
        var pipe: Int32
    }

    private struct State {
        var current: Guard?
        /// The last deadline sent (CLOCK_BOOTTIME ns), for a guard started after it.
        var deadline: UInt64?
        /// The lease was given up: told to the guard, and to one started after.
        var released = false
    }

    /// The variable a fenced start's exec passes the guard's pidfd in.
    static let handoverVariable = "BATON_GUARD_PIDFD"

    private let instance: String
    private let tracking: ProcessTracking
    private let reactor: Reactor
    private let state: LoopOwned<State>
    /// The current guard's pidfd (-1: none), for `handOver`.
    private let pidfd = Atomic<Int32>(-1)
    /// The current guard's pid (0: none), for `endPrevious` (off the loop).
    private let guardPID = Atomic<Int32>(0)

    init(instance: String, tracking: ProcessTracking, reactor: Reactor) {
        self.instance = instance
        self.tracking = tracking
        self.reactor = reactor
        state = LoopOwned(State(), on: reactor)
    }


    /// Ends the guard a previous incarnation of this process handed over (after a fence), then
    /// starts this incarnation's.
    func start() {
        if let text = ProcessInfo.processInfo.environment[Self.handoverVariable] {
            unsetenv(Self.handoverVariable)
            // Only a pidfd is ended (and closed): a stray variable must not close a socket systemd passed.
            if let pidfd = Int32(text), Self.isPidfd(pidfd) { Self.end(previous: pidfd) }
        }
        // Before any run: runs start on the loop, after this.
        reactor.onLoop { [self] in spawn() }
    }

    /// Before a run starts: a guard that died and was not yet heard of is replaced first.
    func ensureRunning() {
        guard let current = state.access({ $0.current }) else { return spawn() }
        guard current.pidfd >= 0 else { return }
        var poller = pollfd(fd: current.pidfd, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, 0) > 0 { died(current.pidfd) }
    }

    /// The lease was renewed: the runs may live until `deadline` (the fence's time).
    func renewed(until deadline: ContinuousClock.Instant) {
        let at = RunGuard.bootNow() &+ UInt64(max((deadline - .now) / .nanoseconds(1), 0))
        reactor.onLoop { [self] in
            let pipe = state.access { state -> Int32? in
                state.deadline = max(state.deadline ?? 0, at)
                return state.current?.pipe
            }
            if let pipe { Self.send(at, to: pipe) }
        }
    }

    /// A clean stop gave the lease up: the guard kills what is left at once when batond is gone,
    /// not at the deadline (another host may take the keys now). Best effort, on the loop.
    func released() {
        reactor.onLoop { [self] in
            let pipe = state.access { state -> Int32? in
                state.released = true
                return state.current?.pipe
            }
            if let pipe { Self.write("released\n", to: pipe) }
        }
    }

    /// Before the exec of a fenced start: the guard's pidfd stays open across it, named in the
    /// environment. (The pipe closes on exec: the guard hears batond's incarnation end and kills
    /// what is left of its runs.)
    func handOver() {
        let pidfd = self.pidfd.load(ordering: .acquiring)
        guard pidfd >= 0 else { return }
        _ = fcntl(pidfd, F_SETFD, 0)
        setenv(Self.handoverVariable, String(pidfd), 1)
    }

    /// The guard's pidfd is readable: it died. Another one starts, with the last deadline.
    private func died(_ pidfd: Int32) {
        guard let gone = state.access({ state -> Guard? in
            guard let current = state.current, current.pidfd == pidfd else { return nil }
            state.current = nil
            return current
        }) else { return }
        self.pidfd.store(-1, ordering: .releasing)
        reactor.remove(gone.pidfd)
        close(gone.pidfd)
        close(gone.pipe)
        Log.warning("the guard of this host's runs (pid \(gone.pid)) died; starting another")
        spawn()
    }

    private func spawn() {
        guard let started = Self.spawnGuard(instance: instance, tracking: tracking) else { return }
        let (deadline, released) = state.access { state -> (UInt64?, Bool) in
            state.current = started
            return (state.deadline, state.released)
        }
        pidfd.store(started.pidfd, ordering: .releasing)
        guardPID.store(started.pid, ordering: .releasing)
        if let deadline { Self.send(deadline, to: started.pipe) }
        if released { Self.write("released\n", to: started.pipe) }
        if started.pidfd >= 0 { reactor.watch(started.pidfd) { [self] _ in died(started.pidfd) } }
    }

    private static func send(_ deadline: UInt64, to pipe: Int32) {
        // Non-blocking: a guard that does not read (stopped) keeps the deadline it has, which is earlier.
        write("deadline \(deadline)\n", to: pipe)
    }

    private static func write(_ text: String, to pipe: Int32) {
        let line = Array(text.utf8)
        _ = line.withUnsafeBytes { Glibc.write(pipe, $0.baseAddress, $0.count) }
    }

    /// Once this start took back the runs its previous start left within the lease: SIGKILLs the
    /// guards of this host's previous starts (found by their command line: `--guard-runs PID
    /// INSTANCE`, INSTANCE one of the tags those starts recorded) that wait for that lease's
    /// deadline to kill the runs now adopted, and waits until they are gone. The /proc scan and
    /// the waits run on a thread of their own. Returns how many.
    @discardableResult
    func endPrevious(instances: Set<String>) async -> Int {
        let mine = guardPID.load(ordering: .acquiring)
        let ended = await SystemThread.run { Self.endGuards(of: instances, except: mine) }
        if ended > 0 { Log.info("ended \(ended) guard\(ended == 1 ? "" : "s") of this host's previous start: its runs are adopted") }
        return ended
    }

    /// Each process whose command line names it a guard of one of `instances` (but `mine`): opened
    /// as a pidfd first, its command line read again through it (the pid not reused meanwhile),
    /// killed through the pidfd and waited for (at most 5 s).
    static func endGuards(of instances: Set<String>, except mine: pid_t) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var ended = 0
        for pid in entries.compactMap({ pid_t($0) }) where pid != mine && pid != getpid() && isGuard(pid, of: instances) {
            let pidfd = baton_pidfd_open(pid)
            guard pidfd >= 0 else { continue }
            defer { close(pidfd) }
            // The pidfd holds this process: a pid reused since the first look fails this one.
            guard isGuard(pid, of: instances), baton_pidfd_signal(pidfd, SIGKILL) == 0 else { continue }
            var poller = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                let ready = poll(&poller, 1, 100)
                if ready > 0 || (ready < 0 && errno != EINTR) { break }
            }
            ended += 1
        }
        return ended
    }

    private static func isGuard(_ pid: pid_t, of instances: Set<String>) -> Bool {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard let flag = arguments.firstIndex(of: "--guard-runs"), arguments.count > flag + 2 else { return false }
        return instances.contains(arguments[flag + 2])
    }

    /// SIGKILLs the guard a previous incarnation handed over and waits until it is gone: nothing
    /// of this incarnation runs yet, and what the old guard was killing, this start's recovery
    /// kills as well.
    private static func end(previous pidfd: Int32) {
        defer { close(pidfd) }
        guard baton_pidfd_signal(pidfd, SIGKILL) == 0 || errno == ESRCH else { return }
        var poller = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, -1) < 0 && errno == EINTR {}
        Log.info("ended the guard of this host's previous start")
    }

    private static func isPidfd(_ fd: Int32) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) == "anon_inode:[pidfd]"
    }

    /// Starts a guard in a session of its own, the read end of a new pipe on its fd 3.
    private static func spawnGuard(instance: String, tracking: ProcessTracking) -> Guard? {
        var fds: [Int32] = [-1, -1]
        guard baton_pipe(&fds) == 0 else {
            Log.warning("cannot start the guard of this host's runs: \(String(cString: strerror(errno)))")
            return nil
        }
        // A read end that is fd 3 already would keep its close-on-exec flag through dup2.
        let reading = fcntl(fds[0], F_DUPFD_CLOEXEC, 10)
        close(fds[0])
        var arguments = ["/proc/self/exe", "--guard-runs", String(getpid()), instance]
        if case let .cgroup(hierarchy) = tracking { arguments.append(hierarchy.directory) }
        // Not tagged itself: the guard must not find and kill itself.
        let environment = ProcessInfo.processInfo.environment.filter { $0.key != "BATON_INSTANCE" && $0.key != handoverVariable }
            .map { "\($0.key)=\($0.value)" }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, reading, RunGuard.pipeDescriptor)
        // Nothing else of batond's: a descriptor batond inherited without close-on-exec (a socket
        // of whatever started it, a socket-activated listener) must not live on in the guard.
        baton_spawn_close_from(&actions, RunGuard.pipeDescriptor + 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A session of its own, and no signal blocked: batond's threads block every signal (its
        // main thread takes them), and a guard that inherited that mask never heard SIGTERM.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(0x80 | POSIX_SPAWN_SETSIGMASK))  // 0x80: POSIX_SPAWN_SETSID
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { (text: String) in strdup(text) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { (text: String) in strdup(text) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, envp)
        close(reading)
        guard rc == 0 else {
            close(fds[1])
            Log.warning("cannot start the guard of this host's runs: \(String(cString: strerror(rc)))")
            return nil
        }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        // Without a pidfd (out of descriptors) the guard still guards, unwatched; its pipe stays
        // open, since closing it would tell the guard to kill every run.
        let pidfd = baton_pidfd_open(pid)
        if pidfd < 0 { Log.warning("cannot watch the guard of this host's runs: \(String(cString: strerror(errno)))") }
        return Guard(pid: pid, pidfd: pidfd, pipe: fds[1])
    }
}
