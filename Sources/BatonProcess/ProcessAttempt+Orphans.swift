import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ProcessAttempt {
    /// Makes batond the reaper of its actions' orphans (PR_SET_CHILD_SUBREAPER), so that what is
    /// left of a run's tree comes to batond, where a run's end finds it, instead of to init; and
    /// sweeps orphans outside any attempt every second. For the daemon only: in a process that has
    /// other children (a test runner with Foundation's `Process`), it would take theirs.
    static func adoptOrphans(on reactor: Reactor) {
        guard baton_set_subreaper() == 0 else { return }
        leaders.withLock { $0.subreaping = true }
        sweepOrphans(on: reactor)
    }

    /// Reaps `pid` unless it leads an attempt (whose status that attempt reaps); says whether it did.
    static func reapIfOrphan(_ pid: pid_t) -> Bool {
        leaders.withLock { $0.mayReap(pid) } && baton_reap_nohang(pid) == 1
    }

    private static func sweepOrphans(on reactor: Reactor) {
        reactor.after(.seconds(1)) {
            while case let child = baton_waitable_child(), child > 0, reapIfOrphan(child) {}
            sweepOrphans(on: reactor)
        }
    }
}

extension ExecRunner {
    /// SIGKILLs every process of every attempt running now (a fleet host that lost its lease
    /// fences itself with it): the cgroup subtree at once where there is one, and the process
    /// group of each attempt; returns how many attempts there were. Spawner threads start no
    /// process after it (a fenced host starts over), and the spawns under way are waited for
    /// (a few milliseconds at most; bounded) so that their leaders are killed too.
    @discardableResult
    public static func killAllGroups() -> Int {
        ProcessAttempt.leaders.withLock { $0.refuseSpawns() }
        var waited = 0
        while ProcessAttempt.leaders.withLock({ $0.spawning }) > 0 && waited < 2_000 {
            usleep(1_000)
            waited += 1
        }
        // Counted before anything is killed: a leader killed first would be reaped (and gone from
        // the set) before it was counted.
        let groups = ProcessAttempt.leaders.withLock { $0.pids }
        for directory in ProcessAttempt.leaders.withLock({ $0.hierarchies }) { CgroupHierarchy(directory: directory).killAll() }
        for pgid in groups { kill(-pgid, SIGKILL) }
        return groups.count
    }
}
