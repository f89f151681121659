import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// A spawned process and its whole tree, served by its `Reactor`: the decisions are
/// `AttemptMachine`'s; this class feeds it what the reactor sees (the leader's pidfd, the tree's
/// `cgroup.events` or its members' pidfds, timers) and performs what it returns. Its state is the
/// loop's (no lock: only the loop touches it). Output and progress are read from the pipes as they come.
final class ProcessAttempt: Attempt {
    let pid: pid_t
    let tree: Tree
    private let reactor: Reactor
    private let events: @Sendable (AttemptEvent) -> Void
    private let state: LoopOwned<State>

    /// Where an attempt's processes are: its cgroup, or found by group, descent and tag.
    enum Tree: Sendable {
        case cgroup(AttemptCgroup)
        case tagged(TaggedTree)
    }

    struct State {
        var machine: AttemptMachine
        var output: AttemptOutput
        var pidfd: Int32
        /// The pidfds of the tree's members being watched (tagged trees), or the cgroup's events.
        var watching: [Int32] = []
        var watchingCgroup = false
        /// A look at the tree is due (coalesces many member exits into one look).
        var lookDue = false
        /// What the leader and the descendants it waited for used (from wait4).
        var leaderUsage: ResourceUsage?
    }

    /// The known leaders, so that the orphan sweep never reaps one (its status is the attempt's).
    /// The runner counts each spawn in it from before the spawn to when its pid is known;
    /// `leaderExited` removes it. Nothing is spawned or reaped under this lock. Process-wide (a
    /// process's children are one set, whichever loop watches them), hence a lock.
    static let leaders = Locked(LeaderBook())

    init(pid: pid_t, tree: Tree, pipes: AttemptOutput.Pipes, tailLimit: Int, machine: AttemptMachine, reactor: Reactor,
         events: @escaping @Sendable (AttemptEvent) -> Void) {
        self.pid = pid
        self.tree = tree
        self.reactor = reactor
        self.events = events
        state = LoopOwned(State(machine: machine, output: AttemptOutput(pipes: pipes, tailLimit: tailLimit), pidfd: baton_pidfd_open(pid)),
                          on: reactor)
    }

    /// Starts watching: pipes and pidfd on the reactor (or, without pidfd, a check every 50 ms).
    /// On the loop (an attempt started elsewhere, by a runner used alone, begins there).
    func begin() {
        guard reactor.isCurrent else { return reactor.post { [self] in begin() } }
        let (pipes, pidfd) = state.access { ($0.output.pipes.open, $0.pidfd) }
        for fd in pipes {
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
        reactor.after(.zero) { [self] in handle(.stop(grace: grace)) }
    }

    /// Hands the machine an event and performs its effects, in order, with no lock held.
    private func handle(_ event: AttemptMachine.Event) {
        for effect in state.access({ $0.machine.handle(event) }) { perform(effect) }
    }

    private func perform(_ effect: AttemptMachine.Effect) {
        assertNoLockHeld("an attempt's effect")
        switch effect {
        case .terminate: signalTree(SIGTERM)
        case .kill: signalTree(SIGKILL)
        case let .armGrace(grace): reactor.after(grace) { [self] in handle(.graceElapsed) }
        case .armGiveUp: reactor.after(.seconds(2)) { [self] in handle(.giveUp) }
        case .watchTree: watchTree()
        case let .end(exitCode, signal, leftovers): end(exitCode: exitCode, signal: signal, leftovers: leftovers)
        }
    }

    // MARK: The tree

    private func signalTree(_ signal: Int32) {
        switch tree {
        case let .cgroup(cgroup):
            cgroup.signal(signal)
        case let .tagged(tagged):
            let reaped = state.access { $0.machine.leader != nil }
            let members = tagged.members(others: otherLeaders(), subreaper: Self.leaders.withLock { $0.subreaping })
            // The group's id is the leader's pid: free for reuse once the leader is reaped and no
            // member holds it (members that left the group do not), when kill(-pid) could reach a
            // stranger's group.
            if !reaped || members.contains(where: { ProcStat(pid: $0)?.pgid == pid }) { kill(-pid, signal) }
            for member in members { kill(member, signal) }
        }
    }

    private func otherLeaders() -> Set<Int32> { Self.leaders.withLock { $0.pids }.subtracting([pid]) }

    /// Looks at the tree and tells the machine; keeps watching for the next change.
    private func watchTree() {
        switch tree {
        case let .cgroup(cgroup):
            let first = state.access { state -> Bool in
                defer { state.watchingCgroup = true }
                return !state.watchingCgroup
            }
            if first { reactor.watch(cgroup.events, priority: true) { [self] _ in lookAtCgroup() } }
            lookAtCgroup()
        case let .tagged(tagged):
            let subreaper = Self.leaders.withLock { $0.subreaping }
            let members = tagged.members(others: otherLeaders(), subreaper: subreaper)
            var pidfds: [Int32] = []
            for member in members {
                let fd = baton_pidfd_open(member)
                if fd >= 0 { pidfds.append(fd) }
            }
            let old = state.access { state -> [Int32] in
                defer { state.watching = pidfds }
                return state.watching
            }
            unwatch(old)
            // A member that exits wakes a look; members that could not be watched are looked for again shortly.
            for fd in pidfds { reactor.watch(fd) { [self] _ in lookSoon() } }
            if pidfds.count < members.count { reactor.after(.milliseconds(20)) { [self] in lookSoon() } }
            handle(.tree(members))
        }
    }

    private func lookAtCgroup() {
        guard case let .cgroup(cgroup) = tree, state.access({ $0.machine.phase == .draining }) else { return }
        let populated = cgroup.isPopulated()
        let members = populated ? cgroup.members() : []
        // Populated with no pid listed: a process is on its way out, and its going is the next change.
        if populated && members.isEmpty { return }
        handle(.tree(members))
    }

    /// Many members exiting at once make one look at the tree, on the reactor's next turn.
    private func lookSoon() {
        let schedule = state.access { state -> Bool in
            defer { state.lookDue = true }
            return !state.lookDue && state.machine.phase == .draining
        }
        guard schedule else { return }
        reactor.after(.zero) { [self] in
            state.access { $0.lookDue = false }
            if state.access({ $0.machine.phase == .draining }) { watchTree() }
        }
    }

    private func unwatch(_ fds: [Int32]) {
        for fd in fds {
            reactor.remove(fd)
            close(fd)
        }
    }

    // MARK: Output

    private func readable(_ fd: Int32) {
        for report in drain(fd) { events(.progress(report)) }
    }

    /// Reads what `fd` has into the output (the read outside the lock, each chunk taken under it);
    /// closes it at its end. Returns the progress lines completed.
    private func drain(_ fd: Int32, limit: Int = AttemptOutput.readsPerTurn) -> [Progress] {
        var reports: [Progress] = []
        let stream = state.access { $0.output.stream(of: fd) }
        let open = AttemptOutput.read(fd, limit: limit, into: reactor.readBuffer) { chunk in
            reports += state.access { $0.output.take(chunk, from: fd) }
            if let stream { events(.output(stream, Array(chunk))) }
        }
        if !open {
            state.access { $0.output.closed(fd) }
            reactor.remove(fd)
            close(fd)
        }
        return reports
    }

    // MARK: The leader's exit, and the end

    private func pollForExit() {
        reactor.after(.milliseconds(50)) { [self] in
            // -1 (no such child) must end the attempt too, or it would be polled for ever.
            if baton_has_exited(pid) != 0 { leaderExited() } else { pollForExit() }
        }
    }

    /// The leader is a zombie: reap it, then let the machine decide about the rest of the tree.
    /// A wake-up while it still runs is ignored (the reap would block the loop until it exits).
    private func leaderExited() {
        guard baton_has_exited(pid) != 0 else { return }
        let pidfd = state.access { state -> Int32 in
            defer { state.pidfd = -1 }
            return state.pidfd
        }
        if pidfd >= 0 {
            reactor.remove(pidfd)
            close(pidfd)
        }
        var exitCode: Int32 = -1, signal: Int32 = 0, user: Int64 = 0, system: Int64 = 0, rss: Int64 = 0
        if baton_reap_usage(pid, &exitCode, &signal, &user, &system, &rss) == 0 {
            let usage = ResourceUsage(cpuUser: .microseconds(user), cpuSystem: .microseconds(system), memoryPeak: rss > 0 ? rss : nil)
            state.access { $0.leaderUsage = usage }
        }
        Self.leaders.withLock { $0.remove(pid) }
        handle(.leaderExited(exitCode: exitCode, signal: signal))
    }

    /// What the attempt used: the cgroup's CPU (every process of the tree) and its memory peak
    /// where the kernel keeps one, else the leader's wait4 figures; the larger memory of the two.
    private func measuredUsage() -> ResourceUsage? {
        let leader = state.access { $0.leaderUsage }
        guard case let .cgroup(cgroup) = tree, let cpu = cgroup.cpuTime() else { return leader }
        let peaks = [cgroup.memoryPeak(), leader?.memoryPeak].compactMap { $0 }
        return ResourceUsage(cpuUser: cpu.user, cpuSystem: cpu.system, memoryPeak: peaks.max())
    }

    /// Takes what is left in the pipes, lets go of every descriptor and the cgroup, and reports.
    private func end(exitCode: Int32, signal: Int32, leftovers: Int) {
        let (open, watching) = state.access { ($0.output.pipes.open, $0.watching) }
        var reports: [Progress] = []
        for fd in open {
            reports += drain(fd, limit: AttemptOutput.readsAtEnd)
            if state.access({ $0.output.pipes.open.contains(fd) }) {
                reactor.remove(fd)
                close(fd)
            }
        }
        unwatch(watching)
        let usage = measuredUsage()
        var oomKills: Int?
        if case let .cgroup(cgroup) = tree {
            reactor.remove(cgroup.events)
            oomKills = cgroup.oomKills()
            // Kept leftovers leave the run's cgroup for batond's own.
            if state.access({ $0.machine.keepLeftovers }) { cgroup.evict(to: cgroup.home) }
            cgroup.remove()
        }
        // The tree's zombies that came to batond (its subreaper): reaped now, not at the next sweep
        // (never a leader: a pid reused by another attempt's leader is that attempt's to reap).
        while case let child = baton_waitable_in_group(pid), child > 0, Self.reapIfOrphan(child) {}
        for member in state.access({ $0.machine.leftovers }) { _ = Self.reapIfOrphan(member) }
        let outcome = state.access { state -> AttemptOutcome in
            state.output.closeAll()
            state.watching = []
            if let report = state.output.finalProgress() { reports.append(report) }
            var result: AttemptResult = signal != 0
                ? .killed(signal: signal, lastErrorLine: state.output.lastError.line)
                : .exited(status: exitCode, lastErrorLine: state.output.lastError.line)
            result.leftovers = leftovers > 0 ? leftovers : nil
            result.usage = usage
            result.oomKills = oomKills
            if let oomKills, oomKills > 0, !result.succeeded {
                let what = "out of memory: the kernel killed \(oomKills) process\(oomKills == 1 ? "" : "es") at the action's memory limit"
                result.error = result.error.map { "\(what) (\($0))" } ?? what
            }
            return AttemptOutcome(result: result, output: state.output.tail.bytes, truncated: state.output.tail.isTruncated)
        }
        for report in reports { events(.progress(report)) }
        events(.ended(outcome))
    }
}
