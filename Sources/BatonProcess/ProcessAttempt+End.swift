import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ProcessAttempt {
    /// What a run's end reads from its cgroup before removing it, off the loop.
    struct CgroupEnd: Sendable {
        var cpu: (user: Duration, system: Duration)?
        var memoryPeak: Int64?
        var oomKills: Int?
    }

    func pollForExit() {
        reactor.after(.milliseconds(50)) { [self] in
            // -1 (no such child) must end the attempt too, or it would be polled for ever.
            if baton_has_exited(pid) != 0 { leaderExited() } else { pollForExit() }
        }
    }

    /// The leader is a zombie: reap it, then let the machine decide about the rest of the tree.
    /// A wake-up while it still runs is ignored (the reap, without hang, finds nothing), and -1
    /// (no such child) ends the attempt too, with no status. One wait4 asks and reaps.
    func leaderExited() {
        let pid = self.pid
        // Handed over: the shim's end is the next batond's to learn (it reads the status the shim keeps).
        // Its spool being read (`endHere`): reaped once that is told.
        guard pid > 0, !state.access({ $0.handedOver || $0.handingOver != nil || $0.spoolPending }) else { return }
        var exitCode: Int32 = -1, signal: Int32 = 0, user: Int64 = 0, system: Int64 = 0, rss: Int64 = 0
        let reaped = baton_reap_usage(pid, &exitCode, &signal, &user, &system, &rss)
        guard reaped != 0 else { return }
        let pidfd = state.access { state -> Int32 in
            defer { state.pidfd = -1 }
            return state.pidfd
        }
        if pidfd >= 0 { reactor.close(pidfd) }
        if reaped == 1 {
            let usage = ResourceUsage(cpuUser: .microseconds(user), cpuSystem: .microseconds(system), memoryPeak: rss > 0 ? rss : nil)
            state.access { $0.leaderUsage = usage }
        }
        Self.leaders.withLock { $0.remove(pid) }
        handle(.leaderExited(exitCode: exitCode, signal: signal))
    }

    /// What the attempt used: the cgroup's CPU (every process of the tree) and its memory peak
    /// where the kernel keeps one, else the leader's wait4 figures; the larger memory of the two.
    static func usage(leader: ResourceUsage?, cgroup: CgroupEnd?) -> ResourceUsage? {
        guard let cgroup, let cpu = cgroup.cpu else { return leader }
        let peaks = [cgroup.memoryPeak, leader?.memoryPeak].compactMap { $0 }
        return ResourceUsage(cpuUser: cpu.user, cpuSystem: cpu.system, memoryPeak: peaks.max())
    }

    /// Takes what is left in the pipes, lets go of every descriptor, and reports; the cgroup's
    /// figures and its removal (and the hook output file's) on a spawner thread, the report
    /// back on the loop after them.
    func end(exitCode: Int32, signal: Int32, leftovers: Int) {
        guard let born = state.access({ $0.born }) else { return }
        let (open, watching) = state.access { ($0.output.pipes.open, $0.watching) }
        var reports: [Progress] = []
        for fd in open {
            reports += drain(fd, limit: AttemptOutput.readsAtEnd).0
            if state.access({ $0.output.pipes.open.contains(fd) }) { reactor.close(fd) }
        }
        unwatch(watching)
        var found: AttemptCgroup?
        if case let .cgroup(made) = born.tree {
            if state.access({ $0.watchingCgroup }) { reactor.remove(made.events) }
            found = made
        }
        let cgroup = found
        // The tree's zombies that came to batond (its subreaper): reaped now, not at the next sweep
        // (never a leader: a pid reused by another attempt's leader is that attempt's to reap).
        while case let child = baton_waitable_in_group(born.pid), child > 0, Self.reapIfOrphan(child) {}
        for member in state.access({ $0.machine.leftovers }) { _ = Self.reapIfOrphan(member) }
        let (adoptedCgroup, adoptedDisk, shimDisk) = state.access { ($0.adoptedCgroup, $0.adoptedDisk, $0.shimDisk) }
        let (hookOutput, shimDirectory, keep, artifacts) = state.access { state -> (String?, String?, Bool, ArtifactWork?) in
            state.output.closeAll()
            state.watching = []
            if let report = state.output.finalProgress() { reports.append(report) }
            return (state.hookOutput, state.shimDirectory, state.machine.keepLeftovers, state.artifacts)
        }
        let told = reports
        guard cgroup != nil || hookOutput != nil || shimDirectory != nil || artifacts != nil else {
            return report(exitCode: exitCode, signal: signal, leftovers: leftovers, cgroup: nil, told)
        }
        let reactor = reactor
        spawner.submit { [self] in
            let measured = cgroup.map { Self.finish($0, keep: keep) }
            if let hookOutput { unlink(hookOutput) }
            // A shim that exited 127 may say its action's program could not be executed: a failed start.
            // An adopted one's status may be in its directory on the disk (`adoptedDisk`).
            let places = [shimDirectory, shimDisk ?? adoptedDisk].compactMap { $0 }
            let unstarted = exitCode == 127 && signal == 0 && !places.isEmpty ? ShimRecord.read(places).execFailureMessage : nil
            // No status in the runtime directory (a full /run refused it): the shim put it on the disk; removed too.
            if let shimDirectory, !ShimRecord.remove(shimDirectory), let shimDisk { ShimRecord.remove(shimDisk) }
            // An adopted attempt's directory on the disk, and the disk's place once empty, where it was
            // found under the runtime directory (a spawned one's is made only once batond is gone, or
            // where /run refused its status: the next start's recovery removes it).
            if let adoptedDisk, let shimDirectory, adoptedDisk.parentPath != shimDirectory.parentPath {
                ShimRecord.remove(adoptedDisk)
                rmdir(adoptedDisk.parentPath)
            }
            if let adoptedCgroup, !keep { _ = AttemptCgroup.destroy(adoptedCgroup) }
            // The run's files are kept before its end is told: its end, once durable, has them.
            Self.keepArtifacts(artifacts, spawner: spawner) {
                reactor.post { [self] in
                    report(exitCode: exitCode, signal: signal, leftovers: leftovers, cgroup: measured, told, unstarted: unstarted)
                }
            }
        }
    }

    /// Off the loop: reads what the cgroup used, moves kept leftovers to batond's own cgroup, removes it.
    static func finish(_ cgroup: AttemptCgroup, keep: Bool) -> CgroupEnd {
        let measured = CgroupEnd(cpu: cgroup.cpuTime(), memoryPeak: cgroup.memoryPeak(), oomKills: cgroup.oomKills())
        // Kept leftovers leave the run's cgroup for batond's own.
        if keep { cgroup.evict(to: cgroup.home) }
        cgroup.remove()
        return measured
    }

    /// The outcome, told with the last progress reports (on the loop).
    /// `unstarted`: the shim could not execute the action's program, and says why.
    private func report(exitCode: Int32, signal: Int32, leftovers: Int, cgroup: CgroupEnd?, _ reports: [Progress], unstarted: String? = nil) {
        let oomKills = cgroup?.oomKills
        let outcome = state.access { state -> AttemptOutcome in
            if let unstarted { return AttemptOutcome(result: .failedToStart(unstarted)) }
            var result: AttemptResult = signal != 0
                ? .killed(signal: signal, lastErrorLine: state.output.lastError.line)
                : .exited(status: exitCode, lastErrorLine: state.output.lastError.line)
            result.leftovers = leftovers > 0 ? leftovers : nil
            result.usage = Self.usage(leader: state.leaderUsage, cgroup: cgroup)
            result.oomKills = oomKills
            if state.outcomeLost {
                result.error = "how the action ended is not known: its shim ended without a status while no batond watched"
            }
            // The conductor says it was out of memory (`AttemptResult.tellOutOfMemory`), after
            // masking the error's line: a wrapping here would hide where the line was cut.
            return AttemptOutcome(result: result, output: state.output.tail.bytes, truncated: state.output.tail.isTruncated)
        }
        for report in reports { events(.progress(report)) }
        events(.ended(outcome))
        toldEnd()
    }

    /// The spawner could not make the leader: it said why (`spawnFailure`), and nothing was left behind.
    func endUnstarted() {
        let why = state.access { $0.spawnFailure ?? "the attempt did not start" }
        events(.started(nil))
        events(.ended(AttemptOutcome(result: .failedToStart(why))))
        toldEnd()
    }

    /// The attempt's `.ended` is told: a hand-over asked while it was ending is declined now (`answerAtEnd`).
    private func toldEnd() {
        let answer = state.access { state in
            defer { (state.endTold, state.answerAtEnd) = (true, nil) }
            return state.answerAtEnd
        }
        answer?(false)
    }
}
