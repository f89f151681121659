import BatonEngine
import BatonRuntime
/// One process attempt's life as a value: its leader is spawned off the loop (a stop meanwhile
/// waits for its birth and reaches it at once: SIGTERM the moment it is born); it runs; once the leader has exited, what is
/// left of its tree is stopped (SIGTERM, SIGKILL after the grace) unless the action keeps
/// leftovers; the attempt ends when the tree is empty — so no follow-up or replacing run starts
/// while a process of this one lives. `handle(event) -> [effect]`, performed by `ProcessAttempt`.
struct AttemptMachine: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// A spawner thread is making the leader: no pid yet.
        case spawning
        /// The leader runs.
        case running
        /// The leader is reaped; its tree is not known to be empty yet.
        case draining
        case ended
    }

    enum Event: Sendable, Equatable {
        /// The spawner made the leader: it runs now.
        case spawned
        /// The spawner could not make it (no cgroup, no such program, …).
        case spawnFailed
        /// Cancel, timeout, replace or shutdown: SIGTERM now, SIGKILL after `grace`.
        case stop(grace: Duration)
        /// The leader was reaped with this status.
        case leaderExited(exitCode: Int32, signal: Int32)
        /// A look at the tree: the pids alive in it now, the leader excluded.
        case tree(Set<Int32>)
        /// A grace armed by `.armGrace` is over.
        case graceElapsed
        /// After SIGKILL, processes that still have not gone (stuck in the kernel) are given up on.
        case giveUp
    }

    enum Effect: Sendable, Equatable {
        /// SIGTERM to the tree (found afresh).
        case terminate
        /// SIGKILL to the tree (found afresh) and to every member the last look found (by its
        /// pidfd): a member the fresh walk misses is still reached.
        case kill
        case armGrace(Duration)
        case armGiveUp
        /// Look at the tree now and again whenever it may have changed, answering with `.tree`.
        case watchTree
        /// The attempt is over: the leader's status, and how many processes were left after it.
        case end(exitCode: Int32, signal: Int32, leftovers: Int)
        /// The attempt is over without a process: it failed to start.
        case endUnstarted
    }

    let killGrace: Duration
    /// `leftovers: "keep"`: the attempt ends with its leader, whatever it left running.
    let keepLeftovers: Bool
    private(set) var phase = Phase.running
    private(set) var leader: (exitCode: Int32, signal: Int32)?
    /// SIGTERM went to the tree (a stop, or leftovers found).
    private(set) var terminated = false
    private(set) var killed = false
    /// Every pid found in the tree after the leader exited.
    private(set) var leftovers = Set<Int32>()
    /// The grace of the last stop asked while spawning: it reaches the leader when it is born.
    private(set) var stopAtBirth: Duration?

    /// `spawning`: the leader is not born yet (it is, for an attempt that starts running).
    init(killGrace: Duration, keepLeftovers: Bool = false, spawning: Bool = false) {
        self.killGrace = killGrace
        self.keepLeftovers = keepLeftovers
        phase = spawning ? .spawning : .running
    }

    mutating func handle(_ event: Event) -> [Effect] {
        guard phase != .ended else { return [] }
        if phase == .spawning { return whileSpawning(event) }
        switch event {
        case .spawned, .spawnFailed:
            return []
        case let .stop(grace):
            guard !killed else { return [] }
            let first = !terminated
            terminated = true
            return (first ? [.terminate] : []) + [.armGrace(grace)]
        case let .leaderExited(exitCode, signal):
            guard phase == .running else { return [] }
            leader = (exitCode, signal)
            if keepLeftovers { return finish() }
            phase = .draining
            return [.watchTree] + (killed ? [.armGiveUp] : [])
        case let .tree(members):
            guard phase == .draining else { return [] }
            if members.isEmpty { return finish() }
            let new = !members.isSubset(of: leftovers)
            leftovers.formUnion(members)
            // Forked after SIGKILL went out (where no cgroup kills them all at once): killed too.
            if killed { return new ? [.kill] : [] }
            guard !terminated else { return [] }
            terminated = true
            return [.terminate, .armGrace(killGrace)]
        case .graceElapsed:
            guard !killed else { return [] }
            killed = true
            return [.kill] + (phase == .draining ? [.armGiveUp] : [])
        case .giveUp:
            // Armed only after SIGKILL; any other is stale.
            guard phase == .draining, killed else { return [] }
            return finish()
        }
    }

    /// Before the leader is born there is nothing to signal: a stop is kept for its birth (the
    /// last one's grace, as a second stop rearms it), everything else is stale.
    private mutating func whileSpawning(_ event: Event) -> [Effect] {
        switch event {
        case let .stop(grace):
            stopAtBirth = grace
            return []
        case .spawned:
            phase = .running
            guard let grace = stopAtBirth else { return [] }
            stopAtBirth = nil
            terminated = true
            return [.terminate, .armGrace(grace)]
        case .spawnFailed:
            phase = .ended
            return [.endUnstarted]
        case .leaderExited, .tree, .graceElapsed, .giveUp:
            return []
        }
    }

    private mutating func finish() -> [Effect] {
        phase = .ended
        let status = leader ?? (-1, 0)
        return [.end(exitCode: status.exitCode, signal: status.signal, leftovers: leftovers.count)]
    }

    static func == (a: AttemptMachine, b: AttemptMachine) -> Bool {
        a.phase == b.phase && a.leader?.exitCode == b.leader?.exitCode && a.leader?.signal == b.leader?.signal
            && a.terminated == b.terminated && a.killed == b.killed && a.leftovers == b.leftovers && a.stopAtBirth == b.stopAtBirth
    }
}
