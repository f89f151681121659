/// Starts the attempts of runs: `ExecRunner` spawns processes, `ClosureRunner` calls Swift code.
public protocol Runner: Sendable {
    /// Starts one attempt and returns its handle at once. The attempt reports, in this order and
    /// from any thread: `started` once, `progress` and `output` any number of times, `ended` once (a failure to
    /// start is an `ended` with a result that says so).
    func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt
}

/// What an attempt reports.
public enum AttemptEvent: Sendable, Equatable {
    /// It began; a process attempt names its process group.
    case started(ProcessGroup?)
    case progress(Progress)
    /// Bytes its processes wrote to stdout or stderr, as they were read (on the loop, in order).
    case output(StandardStream, [UInt8])
    /// It is over: a process attempt once its whole process group is gone.
    case ended(AttemptOutcome)
}

/// One attempt in progress.
public protocol Attempt: AnyObject, Sendable {
    /// Asks the attempt to stop: SIGTERM to its process group and SIGKILL after `grace`, or
    /// cancellation of its task.
    func stop(grace: Duration)
    /// Shutting down: leaves the attempt's process to its shim, which keeps its output and its
    /// status for the next batond (docs/architecture.md, "A run outlives batond"). `done` is told
    /// on the loop, after every byte read from it: true once it is left (nothing of this attempt
    /// is reported any more), false where it cannot be (it goes on as before).
    func handOver(_ done: @escaping @Sendable (Bool) -> Void)
}

extension Attempt {
    /// An attempt without a shim (an in-process task) cannot be handed over.
    public func handOver(_ done: @escaping @Sendable (Bool) -> Void) { done(false) }
}

/// What one attempt of a run is given.
public struct Job: Sendable {
    public var runID: Int64
    public var action: Action
    public var attempt: Int
    public var params: [String: String]
    /// Names the daemon's history (`BATON_INSTANCE`), so that recovery finds this run's processes.
    public var instance: String?
    /// What a hook run is told of the run that fired it (`BATON_HOOK_*`).
    public var hook: HookContext?
    /// Bytes of the run's output before this attempt's (what the history holds once what waits is
    /// written): where this attempt's output begins, for a shim's spool told once (`ShimRecord.markTaken`).
    public var outputBefore: Int64 = 0

    public init(runID: Int64, action: Action, attempt: Int, params: [String: String], instance: String? = nil, hook: HookContext? = nil) {
        self.hook = hook
        self.runID = runID
        self.action = action
        self.attempt = attempt
        self.params = params
        self.instance = instance
    }
}

/// How an attempt ended, with what it wrote.
public struct AttemptOutcome: Sendable, Equatable {
    public var result: AttemptResult
    /// The last bytes of stdout and stderr, interleaved as they arrived.
    public var output: [UInt8]
    /// Whether earlier output was dropped to keep the tail bounded.
    public var truncated: Bool

    public init(result: AttemptResult, output: [UInt8] = [], truncated: Bool = false) {
        self.result = result
        self.output = output
        self.truncated = truncated
    }
}

/// A process group and the identity of its leader (boot id and start time), so that a later
/// daemon kills the group only if it is still the same one.
public struct ProcessGroup: Sendable, Equatable {
    public var pgid: Int32
    public var identity: String

    public init(pgid: Int32, identity: String) {
        self.pgid = pgid
        self.identity = identity
    }
}
