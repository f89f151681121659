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
    /// Called on the loop before each attempt's process is spawned (before its spawn is handed to a spawner thread) (a fleet host makes sure the
    /// guard of its runs lives first).
    public var beforeSpawn: (@Sendable () -> Void)?
    /// Called with each new leader's pid right after the spawn, on the spawner's thread (tests:
    /// to run the orphan sweep at the worst moment).
    var afterSpawn: (@Sendable (pid_t) -> Void)?
    /// Called on the spawner's thread before anything of an attempt is made (tests: a gate).
    var onSpawner: (@Sendable () -> Void)?
    /// The threads attempts are spawned on, and their cgroups removed: the daemon's, passed down
    /// (a runner made without one has a pool of its own; its threads start with the first spawn).
    public var spawner: SpawnerPool
    /// The shim each attempt of an action that survives restarts runs under; nil runs none (the
    /// action is the leader, and dies with batond's recovery).
    public var shim: ShimSetup?
    /// Where the attempts of actions with `artifacts` get their `$BATON_ARTIFACTS`, and what keeps
    /// the files; nil: no directory is made (the action's `artifacts` is not honoured).
    public var artifacts: ArtifactSetup?

    public init(tailLimit: Int = 64 * 1024, inherited: [String: String] = ExecRunner.defaultInherited(), reactor: Reactor? = nil,
                spawner: SpawnerPool = SpawnerPool(threads: SpawnerPool.perCore)) {
        self.tailLimit = tailLimit
        self.inherited = inherited
        self.reactor = reactor
        self.spawner = spawner
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

    /// The environment of an attempt: inherited variables, the action's `env`, then Baton's own
    /// (`fixedEnvironment`, the same for every run of the action, overridden by `ownVariables`).
    public func environment(for job: Job) -> [String: String] {
        var env = fixedEnvironment(job.action, instance: job.instance)
        for (name, value) in ownVariables(job) { env[name] = value }
        return env
    }

    /// What every attempt of `action` gets: inherited variables (or, run as another user, that
    /// user's), the action's `env`, then `BATON_ACTION`, `BATON_PROGRESS_FD` and `BATON_INSTANCE`.
    func fixedEnvironment(_ action: Action, instance: String?) -> [String: String] {
        var env = inherited
        if let user = action.runAs {
            // Another identity gets a clean environment of its own: nothing of batond's leaks.
            env = ["HOME": user.home, "USER": user.user, "LOGNAME": user.user, "SHELL": user.shell,
                   "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
            for name in ["LANG", "TZ"] { if let value = inherited[name] { env[name] = value } }
        }
        for (name, value) in action.env { env[name] = value }
        env["BATON_ACTION"] = action.name
        env["BATON_PROGRESS_FD"] = "3"
        if let instance { env["BATON_INSTANCE"] = instance }
        return env
    }

    /// The variables of one run, in order (a later one wins), over the fixed ones: its id and
    /// attempt, a hook's `BATON_HOOK_*`, its params; a nil value unsets the variable.
    func ownVariables(_ job: Job, artifacts: String? = nil) -> [(name: String, value: String?)] {
        var own: [(name: String, value: String?)] = [("BATON_RUN_ID", String(job.runID)), ("BATON_ATTEMPT", String(job.attempt))]
        if let artifacts { own.append(("BATON_ARTIFACTS", artifacts)) }
        if let hook = job.hook { own += hook.environment.map { ($0.key, $0.value) } }
        for (name, value) in job.params { own.append(("BATON_PARAM_" + name.uppercased(), value)) }
        return own
    }

    public func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
        guard !job.action.exec.isEmpty else {
            return FinishedAttempt(.failedToStart("action \(job.action.name) has nothing to exec"), events)
        }
        beforeSpawn?()
        // The loop decides, a spawner thread makes the process: the attempt is spawning until it
        // hears back, and a stop meanwhile waits for the birth (`AttemptMachine`).
        let reactor = self.reactor ?? Reactor()
        let machine = AttemptMachine(killGrace: job.action.killGrace, keepLeftovers: job.action.leftovers == .keep, spawning: true)
        let attempt = ProcessAttempt(tailLimit: tailLimit, machine: machine, reactor: reactor, spawner: spawner, events: events)
        let runner = self
        spawner.submit(planned: { state in
            let made = runner.make(job, &state)
            reactor.post {
                attempt.state.access { $0.outputBefore = job.outputBefore }
                attempt.spawned(made)
            }
        })
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
