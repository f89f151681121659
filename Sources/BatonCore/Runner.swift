/// Starts the attempts of runs: `ExecRunner` spawns processes, `ClosureRunner` calls Swift code.
public protocol Runner: Sendable {
    /// Starts one attempt and returns its handle at once; failures to start show in its result.
    func start(_ job: Job) -> any Attempt
}

/// One attempt in progress.
public protocol Attempt: AnyObject, Sendable {
    /// The process group of the attempt, when it is a process.
    var processGroup: ProcessGroup? { get }
    /// Asks the attempt to stop: SIGTERM or SIGKILL to a process group, cancellation of a task.
    func signal(_ signal: Int32)
    /// Waits for the attempt to end.
    func wait() async -> AttemptOutcome
}

/// What one attempt of a run is given.
public struct Job: Sendable {
    public var runID: Int64
    public var action: Action
    public var attempt: Int
    public var params: [String: String]
    /// Called with each progress report of the attempt.
    public var progress: @Sendable (Progress) -> Void
    /// Names the daemon's history (`BATON_INSTANCE`), so that recovery finds this run's processes.
    public var instance: String?

    public init(runID: Int64, action: Action, attempt: Int, params: [String: String], instance: String? = nil,
                progress: @escaping @Sendable (Progress) -> Void = { _ in }) {
        self.runID = runID
        self.action = action
        self.attempt = attempt
        self.params = params
        self.instance = instance
        self.progress = progress
    }
}

/// How an attempt ended, with what it wrote.
public struct AttemptOutcome: Sendable {
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
