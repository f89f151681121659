import BatonEngine
import BatonRuntime
import CBatonSystem
import Glibc

/// A planned stop that leaves the attempt running (docs/architecture.md, "A run outlives
/// batond"): the shim alone (its pid, not its group: the signal is not the action's) gets
/// `handOverSignal`, closes its ends of the stdout, stderr and progress pipes and spools from
/// then on, as when batond is gone; batond reads each pipe to its end, so that no byte is lost
/// between what it tells and what the shim keeps, and lets the attempt go without reaping the
/// shim or stopping its tree. An adopted attempt (no pipes: it spools already) goes at once.
extension ProcessAttempt {
    /// The signal that asks a shim to stop relaying. SIGURG: ignored by default, so a shim
    /// that does not know it (or a process that is not a shim) is not harmed by it.
    static let handOverSignal = SIGURG
    /// How long the pipes are read for their end: a shim that does not close them by then (one
    /// that predates the signal) is let go anyway; it spools from its first failed write.
    static let handOverBound: Duration = .seconds(5)

    func handOver(_ done: @escaping @Sendable (Bool) -> Void) {
        reactor.post { [self] in beginHandOver(done) }
    }

    /// On the loop: signals the shim, or declines (no shim, or its leader has exited already:
    /// the attempt ends here as any other). Declined for an attempt that is ending (its leader
    /// reaped, or an adopted shim's status being read), the answer waits for its end to be told:
    /// given before, a conductor past its grace would stop, and record cancelled, a run that
    /// ended by itself (review s37 N2, R2).
    func beginHandOver(_ done: @escaping @Sendable (Bool) -> Void) {
        switch state.access({ $0.machine.phase }) {
        case .spawning: return state.access { $0.handOverAtBirth = done }
        case .running: break
        case .draining, .ended: return answerAtEnd(done)
        }
        let (shim, adopted, pid, pidfd) = state.access { ($0.shimDirectory, $0.adopted, $0.born?.pid ?? 0, $0.pidfd) }
        guard shim != nil, pid > 0 else { return done(false) }
        // An adopted shim whose pidfd is gone has ended: its status is being read.
        guard adopted == nil || pidfd >= 0 else { return answerAtEnd(done) }
        state.access { state in
            state.handingOver = done
            state.pidfd = -1
        }
        // An adopted shim's pipes are gone already; told once, by its pidfd (never a process that
        // reused its pid), it makes its directory on the disk now, where any next batond finds it.
        if adopted != nil, pidfd >= 0 { _ = baton_pidfd_signal(pidfd, Self.handOverSignal) }
        // The shim's end is no longer watched: it stays unreaped until this batond exits, and
        // its status is the next batond's to read.
        if pidfd >= 0 {
            reactor.remove(pidfd)
            close(pidfd)
        }
        if adopted == nil { signalHandOver(pid) }
        if state.access({ $0.output.pipes.open.isEmpty }) { return finishHandOver() }
        reactor.after(Self.handOverBound) { [self] in finishHandOver() }
    }

    /// Declines the hand-over once the attempt's end is told (at once where it is already).
    private func answerAtEnd(_ done: @escaping @Sendable (Bool) -> Void) {
        if state.access({ $0.endTold }) { return done(false) }
        state.access { $0.answerAtEnd = done }
    }

    /// How often the signal is sent again until the pipes reach their end.
    static let handOverResend: Duration = .milliseconds(50)

    /// Signals the shim, and again every `handOverResend` while its pipes are open and the hand-over
    /// is under way (within `handOverBound`): a shim just started may not have its handler yet, and
    /// SIGURG's default is to ignore it. The shim is an unreaped child: its pid is not reused meanwhile.
    private func signalHandOver(_ pid: Int32) {
        kill(pid, Self.handOverSignal)
        reactor.after(Self.handOverResend) { [self] in
            guard state.access({ $0.handingOver != nil && !$0.output.pipes.open.isEmpty }) else { return }
            signalHandOver(pid)
        }
    }

    /// The pipes are read to their end (or the bound is over): what they still hold is read,
    /// every descriptor let go, and the conductor told.
    func finishHandOver() {
        guard let done = state.access({ $0.handingOver }) else { return }
        if let places = exitedShim() { return endHere(spooledIn: places, answer: done) }
        for fd in state.access({ $0.output.pipes.open }) {
            _ = drain(fd, limit: AttemptOutput.readsAtEnd)
            if state.access({ $0.output.pipes.open.contains(fd) }) {
                reactor.remove(fd)
                close(fd)
            }
        }
        let (watching, cgroupWatched, born) = state.access { ($0.watching, $0.watchingCgroup, $0.born) }
        unwatch(watching)
        if cgroupWatched, case let .cgroup(cgroup)? = born?.tree { reactor.remove(cgroup.events) }
        state.access { state in
            state.output.closeAll()
            state.watching = []
            state.watchingCgroup = false
            state.handingOver = nil
            state.handedOver = true
        }
        done(true)
    }

    /// The places of a shim of this batond's that has exited already (an unreaped child: its
    /// pipes ended with its exit, whether or not it saw the signal), nil while it runs. Its end is
    /// this batond's to record, not a next one's: the status it wrote may be on the runtime tmpfs
    /// (a stop followed by a reboot would lose it), the next batond may no longer have its action,
    /// and a shim killed without a status leaves nothing to adopt. An adopted shim spools already.
    private func exitedShim() -> [String]? {
        let (shim, disk, adopted, pid) = state.access { ($0.shimDirectory, $0.shimDisk, $0.adopted, $0.born?.pid ?? 0) }
        guard adopted == nil, let shim, pid > 0, baton_has_exited(pid) == 1 else { return nil }
        return [shim] + (disk.map { [$0] } ?? [])
    }

    /// Ends an attempt whose shim exited during the hand-over, here: what its pipes still hold is
    /// read (its finished progress lines told), then what it spooled once it had seen the signal
    /// (read off the loop; after the pipes' bytes, as it was written), then its leader is reaped as
    /// any attempt's, while nothing else reaps it (`spoolPending`). The hand-over is answered (not
    /// kept) once its end is told: answered before, a conductor whose grace is over would stop a
    /// run that ended by itself, and record it cancelled (review s37 N2).
    private func endHere(spooledIn places: [String], answer done: @escaping @Sendable (Bool) -> Void) {
        state.access { state in
            state.handingOver = nil
            state.spoolPending = true
        }
        answerAtEnd(done)
        for fd in state.access({ $0.output.pipes.open }) {
            for report in drain(fd, limit: AttemptOutput.readsAtEnd).0 { events(.progress(report)) }
        }
        // A progress line left without its end: the shim may have cut it at the signal (it drops
        // progress from then on), so it is not read as the attempt's last report ("47/1" of "47/100").
        _ = state.access { $0.output.finalProgress() }
        collectSpool(places) { [self] _ in
            state.access { $0.spoolPending = false }
            leaderExited()
        }
    }
}
