/// What one attempt's processes used: CPU time (of the whole tree with a cgroup; else of the
/// leader and the descendants it waited for) and the largest memory (the cgroup's peak where the
/// memory controller is on cgroup v2; else the largest resident set among those processes).
public struct ResourceUsage: Sendable, Equatable {
    public var cpuUser: Duration
    public var cpuSystem: Duration
    public var memoryPeak: Int64?

    public init(cpuUser: Duration, cpuSystem: Duration, memoryPeak: Int64?) {
        self.cpuUser = cpuUser
        self.cpuSystem = cpuSystem
        self.memoryPeak = memoryPeak
    }
}

/// How one attempt of a run ended.
public struct AttemptResult: Sendable, Equatable {
    /// Whether the attempt did its work: exit status 0, or a closure that returned.
    public var succeeded: Bool
    /// Whether a process or task started at all.
    public var started: Bool
    public var exitCode: Int32?
    public var signal: Int32?
    /// What went wrong, for people: "exited with status 3: disk full".
    public var error: String?
    /// How many processes of its tree were still alive after its leader exited, and were stopped
    /// (or kept, where the action says `leftovers: "keep"`).
    public var leftovers: Int?
    /// What the attempt's processes used, where it was measured.
    public var usage: ResourceUsage?
    /// How many of its processes the kernel killed for want of memory (its cgroup's
    /// `memory.events`, where the memory controller is enabled); nil where unknown.
    public var oomKills: Int?

    /// Whether the kernel killed one of its processes at its memory limit.
    public var outOfMemory: Bool { (oomKills ?? 0) > 0 }

    public init(succeeded: Bool, started: Bool = true, exitCode: Int32? = nil, signal: Int32? = nil, error: String? = nil) {
        self.succeeded = succeeded
        self.started = started
        self.exitCode = exitCode
        self.signal = signal
        self.error = error
    }

    /// A process that exited with `status`; `lastErrorLine` is the last line it wrote to stderr.
    public static func exited(status: Int32, lastErrorLine: String? = nil) -> AttemptResult {
        if status == 0 { return AttemptResult(succeeded: true, exitCode: 0) }
        return AttemptResult(succeeded: false, exitCode: status,
                             error: withLine("exited with status \(status)", lastErrorLine))
    }

    /// A process killed by `signal`.
    public static func killed(signal: Int32, lastErrorLine: String? = nil) -> AttemptResult {
        AttemptResult(succeeded: false, signal: signal, error: withLine("killed by signal \(signal)", lastErrorLine))
    }

    /// Where the kernel killed some of its processes at its memory limit and it failed, its
    /// error says so first, its own error in parentheses.
    public mutating func tellOutOfMemory() {
        guard let oomKills, oomKills > 0, !succeeded else { return }
        let what = "out of memory: the kernel killed \(oomKills) process\(oomKills == 1 ? "" : "es") at the action's memory limit"
        error = error.map { "\(what) (\($0))" } ?? what
    }

    /// The process could not be started (no such file, bad cwd, …).
    public static func failedToStart(_ message: String) -> AttemptResult {
        AttemptResult(succeeded: false, started: false, error: message)
    }

    /// A closure that returned.
    public static let success = AttemptResult(succeeded: true)

    /// A closure that threw.
    public static func threw(_ message: String) -> AttemptResult {
        AttemptResult(succeeded: false, error: message)
    }

    /// The attempt never began because the run was stopped first.
    public static let notStarted = AttemptResult(succeeded: false, started: false)

    private static func withLine(_ head: String, _ line: String?) -> String {
        guard let line, !line.isEmpty else { return head }
        return "\(head): \(line)"
    }
}
