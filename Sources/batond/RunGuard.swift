import BatonCore
import CBatonSystem
import Foundation

/// The guard of a fleet host's runs: a small process batond starts at boot (`batond
/// --guard-runs PID INSTANCE [CGROUP]`, in a session of its own) that waits for batond to exit,
/// however it exits (kill -9 included), and then kills every process of its runs: the cgroup
/// subtree of its runs (when there is one) and every process still tagged with batond's instance. Without it a batond killed alone would leave its actions running unsupervised
/// while another host, after the lease, starts the same keys.
enum RunGuard {
    /// Starts the guard of this batond; logs and goes on without one if it cannot.
    static func start(instance: String, tracking: ProcessTracking) {
        var pid: pid_t = 0
        var arguments = ["/proc/self/exe", "--guard-runs", String(getpid()), instance]
        if case let .cgroup(hierarchy) = tracking { arguments.append(hierarchy.directory) }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { (text: String) in strdup(text) } + [nil]
        defer { argv.forEach { free($0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID
        // Not tagged itself: the guard must not find and kill itself.
        let environment = ProcessInfo.processInfo.environment.filter { $0.key != "BATON_INSTANCE" }.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { (text: String) in strdup(text) } + [nil]
        defer { envp.forEach { free($0) } }
        let rc = posix_spawn(&pid, "/proc/self/exe", nil, &attributes, argv, envp)
        if rc != 0 { Log.warning("cannot start the guard of this host's runs: \(String(cString: strerror(rc)))") }
    }

    /// The guard itself: returns its exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2 || arguments.count == 3, let pid = pid_t(arguments[0]) else { return 2 }
        let instance = arguments[1]
        let hierarchy = arguments.count == 3 ? CgroupHierarchy(directory: arguments[2]) : nil
        signal(SIGINT, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        let fd = baton_pidfd_open(pid)
        guard fd >= 0 else { return 1 }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, -1) < 0 && errno == EINTR {}
        hierarchy?.killAll()
        let killed = TaggedProcesses.kill(instance: instance, runs: nil)
        if killed > 0 { Log.warning("batond (pid \(pid)) is gone: its guard killed \(killed) leftover processes of its runs") }
        return 0
    }
}
