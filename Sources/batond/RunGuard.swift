import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc

/// The guard of a fleet host's runs: a small process batond starts (`batond --guard-runs PID
/// INSTANCE [CGROUP]`, in a session of its own, batond's end of a pipe on its fd 3) that kills
/// every process of the host's runs (the cgroup subtree of its runs, when there is one, and every
/// process still tagged with the instance) when batond is gone, however it went (kill -9 and an
/// exec included: its end of the pipe closes; within the lease, at the lease's deadline), or when the deadline batond
/// sends after each lease renewal passes without a later one (batond frozen). Without it a batond
/// killed or frozen alone would leave its actions running unsupervised while another host, after
/// the lease, starts the same keys. What it does is `GuardState`'s; this loop reads the pipe,
/// wakes at the deadline and performs the effects. batond's side is `GuardLink`.
enum RunGuard {
    /// The descriptor the guard reads batond's pipe on.
    static let pipeDescriptor: Int32 = 3

    /// The guard itself: returns its exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2 || arguments.count == 3, let pid = pid_t(arguments[0]) else { return 2 }
        let instance = arguments[1]
        let hierarchy = arguments.count == 3 ? CgroupHierarchy(directory: arguments[2]) : nil
        // A terminal's signals are not for it; a log line to a closed stderr must not end it.
        // SIGTERM does (batond starts another while it runs).
        signal(SIGINT, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        var state = GuardState()
        var pending: [UInt8] = []
        while true {
            // Once batond is gone (within the lease), only the deadline is waited for: the pipe says no more.
            var events = state.batondGone ? wait(until: state.wake) : read(&pending, waitingUntil: state.wake)
            events.append(.time(bootNow()))
            for event in events {
                for effect in state.handle(event) {
                    switch effect {
                    case let .killRuns(reason): kill(instance: instance, hierarchy: hierarchy, batond: pid, reason)
                    case .exit: return 0
                    }
                }
            }
        }
    }

    /// Waits until `wake` (no pipe to read), on CLOCK_BOOTTIME: a suspend does not stretch it.
    private static func wait(until wake: UInt64?) -> [GuardState.Event] {
        guard let wake else { return [] }
        var at = timespec(tv_sec: Int(wake / 1_000_000_000), tv_nsec: Int(wake % 1_000_000_000))
        while clock_nanosleep(CLOCK_BOOTTIME, TIMER_ABSTIME, &at, nil) == EINTR {}
        return []
    }

    /// Waits for the pipe (at most until `wake`) and returns what it said.
    private static func read(_ pending: inout [UInt8], waitingUntil wake: UInt64?) -> [GuardState.Event] {
        var poller = pollfd(fd: pipeDescriptor, events: Int16(POLLIN), revents: 0)
        let timeout = wake.map { wake -> Int32 in
            let now = bootNow()
            // At most a second: poll's timeout does not count a suspend, the deadline's clock does.
            return wake <= now ? 0 : Int32(clamping: min((wake - now + 999_999) / 1_000_000, 1_000))
        } ?? -1
        guard poll(&poller, 1, timeout) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(pipeDescriptor, $0.baseAddress, $0.count) }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return [] }
        guard count > 0 else { return [.batondGone] }
        pending += buffer[0..<count]
        var events: [GuardState.Event] = []
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            if let event = GuardState.event(in: Substring(decoding: pending[..<newline], as: UTF8.self)) { events.append(event) }
            pending.removeSubrange(...newline)
        }
        return events
    }

    private static func kill(instance: String, hierarchy: CgroupHierarchy?, batond pid: pid_t, _ reason: GuardState.Reason) {
        hierarchy?.killAll()
        let killed = TaggedProcesses.killUntilGone(instance: instance, runs: nil)
        switch reason {
        case .batondGone:
            if killed > 0 { Log.warning("batond (pid \(pid)) is gone: its guard killed \(killed) leftover processes of its runs") }
        case .leaseDeadline:
            Log.warning("batond (pid \(pid)) has not renewed its fleet lease in time (frozen?): its guard killed "
                + "\(hierarchy == nil ? "" : "the cgroups of its runs and ")\(killed) tagged processes, before another host may take their keys")
        }
    }

    /// CLOCK_BOOTTIME in ns: the clock batond's deadlines are given in (one per machine). Unlike
    /// CLOCK_MONOTONIC it counts a suspend, as the database's clock does: a machine suspended
    /// past the deadline kills the runs as soon as it wakes.
    static func bootNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
