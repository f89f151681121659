import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// Runs an action's `exec` argv in a new process group (and, where batond has a cgroup subtree,
/// in a cgroup of its own), capturing a bounded tail of its output and the progress it writes to
/// `BATON_PROGRESS_FD`; the attempt ends once its whole process tree is gone.
public struct ExecRunner: Runner {
    /// How many bytes of output to keep per attempt.
    public var tailLimit: Int
    /// How an attempt's processes are kept track of.
    public var tracking: ProcessTracking = .processGroup
    /// The daemon environment variables an action inherits; the rest are not passed on.
    public var inherited: [String: String]
    /// Where the attempts' pipes and exits are watched: the conductor's loop (a conductor given
    /// a runner with none fills in its own); nil and used alone, each attempt gets a reactor of its own.
    public var reactor: Reactor?
    /// Called on the loop before each attempt's process is spawned (a fleet host makes sure the
    /// guard of its runs lives first).
    public var beforeSpawn: (@Sendable () -> Void)?
    /// Called with each new leader's pid right after the spawn (tests: to run the orphan sweep
    /// at the worst moment).
    var afterSpawn: (@Sendable (pid_t) -> Void)?

    public init(tailLimit: Int = 64 * 1024, inherited: [String: String] = ExecRunner.defaultInherited(), reactor: Reactor? = nil) {
        self.tailLimit = tailLimit
        self.inherited = inherited
        self.reactor = reactor
    }

    /// Makes this process reap its actions' orphans on `reactor` (see `ProcessAttempt.adoptOrphans`): for batond.
    public static func adoptOrphans(on reactor: Reactor) { ProcessAttempt.adoptOrphans(on: reactor) }

    /// PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ and TMPDIR of the daemon; a default PATH when it has none.
    public static func defaultInherited() -> [String: String] {
        var kept = ProcessInfo.processInfo.environment.filter { name, _ in
            ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR"].contains(name) || name.hasPrefix("LC_")
        }
        if kept["PATH"] == nil { kept["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
        return kept
    }

    /// The environment of an attempt: inherited variables, the action's `env`, then Baton's own.
    public func environment(for job: Job) -> [String: String] {
        var env = inherited
        if let user = job.action.runAs {
            // Another identity gets a clean environment of its own: nothing of batond's leaks.
            env = ["HOME": user.home, "USER": user.user, "LOGNAME": user.user, "SHELL": user.shell,
                   "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
            for name in ["LANG", "TZ"] { if let value = inherited[name] { env[name] = value } }
        }
        for (name, value) in job.action.env { env[name] = value }
        env["BATON_ACTION"] = job.action.name
        env["BATON_RUN_ID"] = String(job.runID)
        env["BATON_ATTEMPT"] = String(job.attempt)
        env["BATON_PROGRESS_FD"] = "3"
        if let instance = job.instance { env["BATON_INSTANCE"] = instance }
        if let hook = job.hook { env.merge(hook.environment) { _, own in own } }
        for (name, value) in job.params { env["BATON_PARAM_" + name.uppercased()] = value }
        return env
    }

    /// posix_spawn in the common case; vfork and exec when the process joins a cgroup, takes
    /// another identity or umask first.
    static func spawn(_ action: Action, _ argv: UnsafePointer<UnsafePointer<CChar>?>, _ envp: UnsafePointer<UnsafePointer<CChar>?>,
                      _ stdout: Int32, _ stderr: Int32, _ progress: Int32, cgroup: Int32, v1: [Int32] = [], _ pid: inout pid_t) -> Int32 {
        let cwd = action.cwd.map { strdup($0) } ?? nil
        defer { free(cwd) }
        guard action.runAs != nil || action.umask != nil || cgroup >= 0 else {
            return baton_spawn(argv, envp, cwd, stdout, stderr, progress, &pid)
        }
        let user = action.runAs
        let groups = user?.groups ?? []
        return groups.withUnsafeBufferPointer { list in
            v1.withUnsafeBufferPointer { v1 in
                baton_spawn_in(argv, envp, cwd, stdout, stderr, progress, cgroup, v1.baseAddress, v1.count, user == nil ? 0 : 1,
                               user?.uid ?? 0, user?.gid ?? 0, list.baseAddress, list.count, action.umask == nil ? 0 : 1,
                               mode_t(action.umask ?? 0), &pid)
            }
        }
    }

    public func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
        guard !job.action.exec.isEmpty else {
            return FinishedAttempt(.failedToStart("action \(job.action.name) has nothing to exec"), events)
        }
        var job = job
        if let configured = job.action.runAs {
            // The name is the identity: looked up at each start, so that a uid given to another
            // user since the config was read never runs this action.
            switch configured.resolved() {
            case let .success(current): job.action.runAs = current
            case let .failure(why):
                return FinishedAttempt(.failedToStart("cannot run as \(Action.quoted(configured.named)): \(why) now "
                    + "(it was uid \(configured.uid) when the config was read)"), events)
            }
        }
        var events = events
        var hookOutput: String?
        if let hook = job.hook {
            switch writeHookOutput(hook, job) {
            case let .success(path):
                hookOutput = path
                let told = events
                events = { event in
                    if case .ended = event { unlink(path) }
                    told(event)
                }
            case let .failure(why):
                return FinishedAttempt(.failedToStart(why.message), events)
            }
        }
        beforeSpawn?()
        // With `tty`, stdout and stderr are one pseudo-terminal (its master read as stdout), and err stays [-1, -1].
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1], prog: [Int32] = [-1, -1]
        var made: Int32 = 0
        if job.action.tty {
            var (master, slave): (Int32, Int32) = (-1, -1)
            made = baton_openpty(&master, &slave)
            out = [master, slave]
        } else if baton_pipe(&out) != 0 || baton_pipe(&err) != 0 {
            made = errno
        }
        guard made == 0, baton_pipe(&prog) == 0 else {
            let message = "cannot create \(job.action.tty ? "a pseudo-terminal or pipe" : "pipes"): \(String(cString: strerror(made == 0 ? errno : made)))"
            for fd in out + err + prog where fd >= 0 { close(fd) }
            return FinishedAttempt(.failedToStart(message), events)
        }
        let (stdoutEnd, stderrEnd) = (out[1], err[1] >= 0 ? err[1] : out[1])
        var cgroup: AttemptCgroup?
        if case let .cgroup(hierarchy) = tracking {
            ProcessAttempt.leaders.withLock { _ = $0.hierarchies.insert(hierarchy.directory) }
            let plan = LimitPlan.make(job.action.limits, support: hierarchy.limits)
            switch AttemptCgroup.create(hierarchy.path(run: job.runID, attempt: job.attempt), home: hierarchy.home, plan: plan) {
            case let .success(made): cgroup = made
            case let .failure(why):
                for fd in out + err + prog { close(fd) }
                return FinishedAttempt(.failedToStart("cannot give the attempt its cgroup: \(why)"), events)
            }
        }
        var variables = environment(for: job)
        variables["BATON_HOOK_OUTPUT"] = hookOutput
        let env = variables.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let action = job.action
        // The spawn is counted before it starts: a leader that exits at once would otherwise be
        // reaped as an orphan before its pid is known, its status lost and its attempt never ended.
        ProcessAttempt.leaders.withLock { $0.beginSpawn() }
        let rc = withCStrings(action.exec) { argv in
            withCStrings(env) { envp in
                Self.spawn(action, argv, envp, stdoutEnd, stderrEnd, prog[1], cgroup: cgroup?.procs ?? -1, v1: cgroup?.v1?.procs ?? [], &pid)
            }
        }
        ProcessAttempt.leaders.withLock { $0.endSpawn(rc == 0 ? pid : nil) }
        for fd in [out[1], err[1], prog[1]] where fd >= 0 { close(fd) }
        cgroup?.closeProcs()
        guard rc == 0 else {
            for fd in [out[0], err[0], prog[0]] where fd >= 0 { close(fd) }
            cgroup?.remove()
            var message = "cannot run \(job.action.exec[0]): \(String(cString: strerror(rc)))"
            if rc == ENOENT, let cwd = job.action.cwd, access(cwd, F_OK) != 0 {
                message = "cannot run \(job.action.exec[0]): working directory \(cwd) does not exist"
            }
            return FinishedAttempt(.failedToStart(message), events)
        }
        afterSpawn?(pid)
        events(.started(ProcessGroup(pgid: pid, identity: ProcessGroup.identity(of: pid))))
        let tree: ProcessAttempt.Tree = cgroup.map { .cgroup($0) } ?? .tagged(TaggedTree(leader: pid, instance: job.instance, run: job.runID))
        let machine = AttemptMachine(killGrace: job.action.killGrace, keepLeftovers: job.action.leftovers == .keep)
        let attempt = ProcessAttempt(pid: pid, tree: tree, pipes: .init(stdout: out[0], stderr: err[0], progress: prog[0]),
                                     tailLimit: tailLimit, machine: machine, reactor: reactor ?? Reactor(), events: events)
        attempt.begin()
        return attempt
    }
}

/// An attempt that ended before it began.
final class FinishedAttempt: Attempt {
    init(_ result: AttemptResult, _ events: @Sendable (AttemptEvent) -> Void) {
        events(.started(nil))
        events(.ended(AttemptOutcome(result: result)))
    }
    func stop(grace: Duration) {}
}

/// Calls `body` with a NULL-terminated array of C strings.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let pointers = strings.map { strdup($0) }
    defer { for pointer in pointers { free(pointer) } }
    let array = pointers.map { UnsafePointer($0) } + [nil]
    return array.withUnsafeBufferPointer { body($0.baseAddress!) }
}
