import BatonEngine
import BatonRuntime
import Glibc

/// The processes that lead attempts, as the orphan sweep must know them: a leader's status is its
/// attempt's to reap, never the sweep's. A spawn is counted from before it starts to when its pid
/// is known, and while one is counted nothing is reaped as an orphan (a leader that exits at once
/// is an exited child before its pid is in the book). Kept under a lock by its owner, and only
/// changed there: the spawn and the reap themselves happen outside it.
struct LeaderBook: Sendable {
    /// The attempts' leaders.
    private(set) var pids: Set<pid_t> = []
    /// Spawns begun whose pid is not known yet.
    private(set) var spawning = 0
    /// Whether this process adopts its descendants' orphans (batond does; tests in-process do not).
    var subreaping = false
    /// The cgroup subtrees attempts were started in, for `ExecRunner.killAllGroups`.
    var hierarchies: Set<String> = []

    /// Set by `ExecRunner.killAllGroups` (a fenced host): no spawn begins after it.
    private(set) var refusing = false

    /// A spawn is about to begin; false (and not counted) once spawns are refused.
    mutating func beginSpawn() -> Bool {
        guard !refusing else { return false }
        spawning += 1
        return true
    }

    /// No spawn begins from now on; the leaders to kill once those under way are over (`spawning` 0).
    mutating func refuseSpawns() { refusing = true }

    /// The spawn begun is over: `pid` leads an attempt now, or nil when nothing was spawned.
    mutating func endSpawn(_ pid: pid_t?) {
        spawning -= 1
        if let pid { pids.insert(pid) }
    }

    /// A leader was reaped by its attempt.
    mutating func remove(_ pid: pid_t) { pids.remove(pid) }

    /// Whether the exited child `pid` may be reaped as an orphan: it leads no attempt, and no
    /// spawn is under way whose leader it could be. (Its pid stays taken until it is reaped, so a
    /// later spawn cannot make it a leader between this answer and the reap.)
    func mayReap(_ pid: pid_t) -> Bool { spawning == 0 && !pids.contains(pid) }
}
