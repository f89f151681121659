import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ExecRunner {
    /// Attaches to an attempt a previous batond started under `baton-shim` (`ShimAdoption`):
    /// watches the shim (not this process's child: by pidfd), and when it ends reads the status
    /// and the output it kept; then the tree is drained as any attempt's. A stop signals the
    /// shim's group, as it would the action's.
    public func attach(_ job: Job, _ surviving: SurvivingAttempt, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
        let reactor = self.reactor ?? Reactor()
        let machine = AttemptMachine(killGrace: job.action.killGrace, keepLeftovers: job.action.leftovers == .keep, spawning: true)
        let attempt = ProcessAttempt(tailLimit: tailLimit, machine: machine, reactor: reactor, spawner: spawner, events: events)
        let tree = ProcessAttempt.Tree.tagged(TaggedTree(leader: surviving.pid, instance: job.instance, run: job.runID, adopted: true,
                                                         leaderIdentity: surviving.alive ? surviving.identity : nil))
        var cgroup: String?
        if case let .cgroup(hierarchy) = tracking { cgroup = hierarchy.path(run: job.runID, attempt: surviving.attempt) }
        let artifacts = adoptedArtifacts(job, attempt: surviving.attempt)
        reactor.post { [cgroup] in
            attempt.state.access { $0.artifacts = artifacts }
            attempt.attached(surviving, tree: tree, cgroup: cgroup)
        }
        return attempt
    }
}

extension ProcessAttempt {
    /// On the loop: the adopted shim is this attempt's leader from now on.
    func attached(_ surviving: SurvivingAttempt, tree: Tree, cgroup: String?) {
        reactor.assertOnLoop("an adopted attempt")
        let pidfd = surviving.alive ? baton_pidfd_open(surviving.pid) : -1
        state.access { state in
            state.born = Born(pid: surviving.pid, tree: tree)
            state.pidfd = pidfd
            state.adopted = surviving.directory
            state.adoptedDisk = surviving.disk
            state.shimDirectory = surviving.directory
            state.adoptedCgroup = cgroup
            state.outputBefore = surviving.outputTotal
        }
        events(.started(ProcessGroup(pgid: surviving.pid, identity: surviving.identity)))
        handle(.spawned)
        // A shim that ended between recovery's look and now has no pidfd: its status is read at once.
        if pidfd >= 0 { reactor.watch(pidfd) { [self] _ in shimEnded() } } else { shimEnded() }
    }

    /// The shim exited (its pidfd is readable): its status and spool are read off the loop.
    private func shimEnded() {
        let (pidfd, directory, disk) = state.access { state -> (Int32, String?, String?) in
            defer { state.pidfd = -1 }
            return (state.pidfd, state.adopted, state.adoptedDisk)
        }
        if pidfd >= 0 {
            reactor.remove(pidfd)
            close(pidfd)
        }
        guard let directory else { return }
        collectSpool([directory] + (disk.map { [$0] } ?? [])) { [self] record in collected(record) }
    }

    /// Off the loop, reads what a shim kept in `places` (its status and spool) and says where the
    /// spool begins in the run's output before telling it (`ShimRecord.markTaken`: the run's
    /// output before this attempt, and what its pipes gave), so that a batond that collects it
    /// again after a crash of this one tells only what the history lacks (`untold`); then, on the
    /// loop, takes the whole spool for the attempt's tail (what its end hooks are given), tells
    /// what is untold, and hands the record to `then`. An adopted shim's collection and a
    /// hand-over ended here (`endHere`) alike.
    func collectSpool(_ places: [String], then: @escaping @Sendable (ShimRecord) -> Void) {
        let at = state.access { $0.outputBefore + $0.output.told }
        let reactor = reactor
        spawner.submit { [self] in
            let record = ShimRecord.read(places)
            record.markTaken(at: at)
            let untold = record.untold(historyTotal: at)
            reactor.post { [self] in
                if !record.output.isEmpty { state.access { $0.output.takeSpooled(record.output) } }
                if !untold.isEmpty { events(.output(.stdout, untold)) }
                then(record)
            }
        }
    }

    /// What the shim kept ends the leader. A shim gone without a status (killed, or it could not
    /// write one): the outcome is not known, and the run's end says so.
    private func collected(_ record: ShimRecord) {
        if record.exitCode == nil && record.signal == nil { state.access { $0.outcomeLost = true } }
        let signal = record.signal ?? (record.exitCode == nil ? SIGKILL : 0)
        handle(.leaderExited(exitCode: record.exitCode ?? -1, signal: signal))
    }
}
