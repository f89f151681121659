import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// A process and its whole tree, served by its `Reactor`: the decisions are `AttemptMachine`'s;
/// this class feeds it what the reactor sees (the spawner's answer, the leader's pidfd, the tree's
/// `cgroup.events` or its members' pidfds, timers) and performs what it returns. Its state is the
/// loop's (no lock: only the loop touches it). Output and progress are read from the pipes as they come.
/// It exists before its leader does: a spawner thread makes the leader (`spawned` brings it back).
final class ProcessAttempt: Attempt {
    let reactor: Reactor
    let events: @Sendable (AttemptEvent) -> Void
    let state: LoopOwned<State>
    /// Where the end's cgroup reads and removals go (the spawners: never the loop).
    let spawner: SpawnerPool
    let tailLimit: Int

    /// Where an attempt's processes are: its cgroup, or found by group, descent and tag.
    enum Tree: Sendable {
        case cgroup(AttemptCgroup)
        case tagged(TaggedTree)
    }

    struct State {
        var machine: AttemptMachine
        var output: AttemptOutput
        /// The leader and where its tree is, once born.
        var born: Born?
        var pidfd: Int32 = -1
        /// The hook output file the attempt removes when it ends.
        var hookOutput: String?
        /// The shim directory the attempt removes when it ends (its leader, the shim, told batond the status).
        var shimDirectory: String?
        /// Its directory on the disk (`-s`), where the shim put a status the runtime directory refused.
        var shimDisk: String?
        /// The attempt's artifacts directory: its files kept, then removed, at the end.
        var artifacts: ArtifactWork?
        /// The shim directory of an attempt a previous batond started (attached to, not spawned).
        var adopted: String?
        /// An adopted attempt's directory on the disk (its shim's spool and late status), removed at its end.
        var adoptedDisk: String?
        /// An adopted shim ended without a status: how the action ended is not known.
        var outcomeLost = false
        /// The cgroup the previous batond made for an adopted attempt (removed at its end).
        var adoptedCgroup: String?
        /// A hand-over that ends here (`endHere`): its shim's spool is being read (nothing reaps the
        /// leader meanwhile), and the answer, given once the attempt's end is told.
        var spoolPending = false
        /// The attempt's `.ended` was told (a hand-over asked after it is answered at once).
        var endTold = false
        /// Bytes of the run's output before this attempt's (`Job.outputBefore`; an adopted one's: what
        /// the history held at its adoption).
        var outputBefore: Int64 = 0
        var answerAtEnd: (@Sendable (Bool) -> Void)?
        /// Why the spawner could not make the leader.
        var spawnFailure: String?
        /// The pidfds of the tree's members being watched (tagged trees), or the cgroup's events.
        var watching: [Int32] = []
        var watchingCgroup = false
        /// A look at the tree is due (coalesces many member exits into one look).
        var lookDue = false
        /// A look at a tagged tree is on a spawner thread; another was asked meanwhile.
        var looking = false
        var lookAgain = false
        /// What the leader and the descendants it waited for used (from wait4).
        var leaderUsage: ResourceUsage?
        /// A hand-over under way (`ProcessAttempt+HandOver`): told once the pipes are read to their end.
        var handingOver: (@Sendable (Bool) -> Void)?
        /// A hand-over asked before the leader was born: begun at its birth.
        var handOverAtBirth: (@Sendable (Bool) -> Void)?
        /// Left to its shim: nothing of it is watched or reported any more.
        var handedOver = false
    }

    /// The known leaders, so that the orphan sweep never reaps one (its status is the attempt's).
    /// The runner counts each spawn in it from before the spawn to when its pid is known;
    /// `leaderExited` removes it. Nothing is spawned or reaped under this lock. Process-wide (a
    /// process's children are one set, whichever loop watches them), hence a lock.
    static let leaders = Locked(LeaderBook())

    /// The leader's pid and its tree.
    struct Born {
        var pid: pid_t
        var tree: Tree
    }

    /// An attempt whose leader a spawner is making (`machine` is `spawning`).
    init(tailLimit: Int, machine: AttemptMachine, reactor: Reactor, spawner: SpawnerPool, events: @escaping @Sendable (AttemptEvent) -> Void) {
        self.reactor = reactor
        self.events = events
        self.spawner = spawner
        self.tailLimit = tailLimit
        let none = AttemptOutput.Pipes(stdout: -1, stderr: -1, progress: -1)
        state = LoopOwned(State(machine: machine, output: AttemptOutput(pipes: none, tailLimit: tailLimit)), on: reactor)
    }

    /// The leader's pid (0 before it is born).
    var pid: pid_t { state.access { $0.born?.pid ?? 0 } }

    func stop(grace: Duration) {
        reactor.after(.zero) { [self] in handle(.stop(grace: grace)) }
    }

    /// Hands the machine an event and performs its effects, in order, with no lock held.
    func handle(_ event: AttemptMachine.Event) {
        if state.access({ $0.handedOver || $0.handingOver != nil }) { return }
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
        case .endUnstarted: endUnstarted()
        }
    }

    // MARK: The tree

    private func signalTree(_ signal: Int32) {
        guard let born = state.access({ $0.born }) else { return }
        let pid = born.pid
        switch born.tree {
        case let .cgroup(cgroup):
            cgroup.signal(signal)
        case let .tagged(tagged):
            let reaped = state.access { $0.machine.leader != nil }
            let members = tagged.members(others: otherLeaders(), subreaper: Self.leaders.withLock { $0.subreaping })
            // The group's id is the leader's pid: free for reuse once the leader is reaped and no
            // member holds it (members that left the group do not), when kill(-pid) could reach a
            // stranger's group.
            if (!reaped && tagged.leaderIsOurs) || members.contains(where: { ProcStat(pid: $0)?.pgid == pid }) { kill(-pid, signal) }
            for member in members { kill(member, signal) }
            // Every member a look found is watched by its pidfd: SIGKILL reaches each of them even
            // where this walk missed one (a process between parents as it read), and never a
            // stranger that took a dead member's pid. (SIGTERM goes once: the walk's.)
            if signal == SIGKILL {
                for fd in state.access({ $0.watching }) { _ = baton_pidfd_signal(fd, SIGKILL) }
            }
        }
    }

    private func otherLeaders() -> Set<Int32> { Self.leaders.withLock { $0.pids }.subtracting([pid]) }

    private var tree: Tree? { state.access { $0.born?.tree } }

    /// Looks at the tree and tells the machine; keeps watching for the next change.
    private func watchTree() {
        guard let tree else { return }
        switch tree {
        case let .cgroup(cgroup):
            // Most trees are empty when their leader is reaped: one look ends them. Only a tree
            // with processes left is watched (`cgroup.events`), and looked at again once watched,
            // so that a change between the look and the watch is not missed.
            lookAtCgroup()
            let watch = state.access { state -> Bool in
                guard state.machine.phase == .draining, !state.watchingCgroup else { return false }
                state.watchingCgroup = true
                return true
            }
            guard watch else { return }
            reactor.watch(cgroup.events, priority: true) { [self] _ in lookAtCgroup() }
            lookAtCgroup()
        case let .tagged(tagged):
            let start = state.access { state -> Bool in
                if state.looking { state.lookAgain = true }
                defer { state.looking = true }
                return !state.looking
            }
            guard start else { return }
            // The tree is found in /proc on a spawner thread, never the loop; the answer comes back to it.
            let (reactor, leader) = (reactor, pid)
            spawner.submit { [self] in
                let others = Self.leaders.withLock { $0.pids }.subtracting([leader])
                let members = tagged.members(others: others, subreaper: Self.leaders.withLock { $0.subreaping })
                reactor.post { [self] in looked(members) }
            }
        }
    }

    /// A look at a tagged tree is back: its members are watched (a member that exits wakes the
    /// next look) and the machine told. Nothing once the attempt is no longer draining.
    private func looked(_ members: Set<Int32>) {
        let again = state.access { state -> Bool in
            defer { (state.looking, state.lookAgain) = (false, false) }
            return state.lookAgain
        }
        guard state.access({ $0.machine.phase == .draining }) else { return }
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
        if again { lookSoon() }
    }

    private func lookAtCgroup() {
        guard case let .cgroup(cgroup)? = tree, state.access({ $0.machine.phase == .draining }) else { return }
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

    func unwatch(_ fds: [Int32]) {
        for fd in fds {
            reactor.remove(fd)
            close(fd)
        }
    }

    // MARK: Output

    /// `fd` has input or hung up (`mask`: the epoll events); read as `AttemptOutput.stopsAtShortRead`
    /// says (hung up: to its end, whatever the mask). The watch is edge-triggered: what the limit of
    /// reads left is read by a re-read it posts, one at most pending per pipe (a pipe kept full gets
    /// its edge's reads and one re-read's a turn, not one more each turn). Asked from a handler, the
    /// re-read runs in this turn's posted work, after the handlers; asked from a re-read, next turn.
    func readable(_ fd: Int32, _ mask: UInt32) {
        let (reports, left) = drain(fd, shortIsEmpty: AttemptOutput.stopsAtShortRead(mask))
        for report in reports { events(.progress(report)) }
        guard left == .more, state.access({ $0.output.askReread(fd) }) else { return }
        reactor.post { [self] in
            if state.access({ $0.output.rereadRuns(fd) }) { readable(fd, mask) }
        }
    }

    /// Reads what `fd` has into the output (the read outside the lock, each chunk taken under it);
    /// closes it at its end. Returns the progress lines completed, and how the pipe was left.
    func drain(_ fd: Int32, limit: Int = AttemptOutput.readsPerTurn, shortIsEmpty: Bool = false) -> ([Progress], AttemptOutput.Left) {
        var reports: [Progress] = []
        let stream = state.access { $0.output.stream(of: fd) }
        let left = AttemptOutput.read(fd, limit: limit, shortIsEmpty: shortIsEmpty, into: reactor.readBuffer) { chunk in
            reports += state.access { $0.output.take(chunk, from: fd) }
            if let stream { events(.output(stream, Array(chunk))) }
        }
        if left == .ended { pipeEnded(fd) }
        return (reports, left)
    }

    /// The pipe `fd` is at its end: let go of it (and finish a hand-over that waited for it).
    /// Watched edge-triggered and ours alone: closed with no `EPOLL_CTL_DEL` (`Reactor.close`).
    private func pipeEnded(_ fd: Int32) {
        state.access { $0.output.closed(fd) }
        reactor.close(fd)
        if state.access({ $0.handingOver != nil && $0.output.pipes.open.isEmpty }) { reactor.post { [self] in finishHandOver() } }
    }
}
