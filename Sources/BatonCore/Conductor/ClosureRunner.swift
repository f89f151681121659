
/// Runs an in-process action: a Swift closure with the same phases, single flight and history
/// as a process. Cancel and timeout cancel the closure's task; a closure that ignores
/// cancellation runs on until it returns.
public struct ClosureRunner: Runner {
    /// The work of an in-process action.
    public typealias Body = @Sendable (RunContext) async throws -> Void

    let body: Body

    public init(_ body: @escaping Body) {
        self.body = body
    }

    public func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
        let context = RunContext(runID: job.runID, attempt: job.attempt, params: job.params) { events(.progress($0)) }
        let body = body
        events(.started(nil))
        return TaskAttempt(Task {
            let result: AttemptResult
            do {
                try await body(context)
                result = .success
            } catch is CancellationError {
                result = .threw("cancelled")
            } catch {
                result = .threw(String(describing: error))
            }
            events(.ended(AttemptOutcome(result: result)))
        })
    }
}

/// What an in-process action is given: its run, attempt and params, and a way to report progress.
public struct RunContext: Sendable {
    public var runID: Int64
    public var attempt: Int
    public var params: [String: String]
    let report: @Sendable (Progress) -> Void

    /// Reports progress, as a process does on `BATON_PROGRESS_FD`.
    public func progress(_ progress: Progress) { report(progress) }

    /// Reports a fraction done, from 0 to 1.
    public func progress(_ fraction: Double, _ message: String? = nil) {
        report(Progress(fraction: fraction, message: message))
    }
}

/// An attempt that is a task; stopping it cancels the task.
final class TaskAttempt: Attempt {
    let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) { self.task = task }

    func stop(grace: Duration) { task.cancel() }
}
