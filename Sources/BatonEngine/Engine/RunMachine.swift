/// The life of one run as a pure state machine: an event in, the effects to perform out.
///
/// The conductor owns one per run in flight and performs the effects in order: it records a
/// transition before it launches an attempt, and it finishes a run only once the terminal
/// transition is recorded. Nothing here touches a clock, a process or the store.
public struct RunMachine: Sendable, Equatable {
    /// Where the run is; `ended` is final.
    public enum State: Sendable, Equatable {
        case queued
        case loading(attempt: Int)
        case retrying(attempt: Int)
        case ended(Phase)
    }

    /// Why a run is being stopped before it ends by itself.
    public enum Stop: Sendable, Equatable {
        /// `principal`: a group principal's name (the team's dashboard), kept as the transition's `via`.
        case cancelled(by: UInt32?, principal: String? = nil)
        case replaced(by: Int64)
        case timeout(after: Duration)
        case shutdown
        /// A run it needs ended other than `success` (`NeededRun.failure` says how): it never starts.
        case needs(String)
        /// Denied by an approver (`baton deny`), with their reason: it never starts.
        case denied(by: String, reason: String?)
        /// Nobody approved it within the action's `approve.timeout`: it never starts.
        case approvalTimedOut(after: Duration)

        /// The phase a stopped run ends in: `failure` for a timeout or a need that failed, `cancelled` otherwise.
        public var phase: Phase {
            switch self {
            case .timeout, .needs: .failure
            default: .cancelled
            }
        }

        public var detail: TransitionDetail {
            switch self {
            case let .cancelled(by, principal): TransitionDetail(reason: "cancelled", by: by).naming(principal)
            case let .replaced(by): TransitionDetail(reason: "replaced", error: "replaced by run \(by)", replacedBy: by)
            case let .timeout(after): TransitionDetail(reason: "timeout", error: "timed out after \(DurationText.format(after))")
            case .shutdown: TransitionDetail(reason: "shutdown", error: "batond shut down")
            case let .needs(message): TransitionDetail(reason: "needs", error: message)
            case let .denied(by, reason): TransitionDetail(reason: "denied", error: "denied by \(by)" + (reason.map { ": \($0)" } ?? ""))
            case let .approvalTimedOut(after): TransitionDetail(reason: "approval", error: "approval timed out after \(DurationText.format(after))")
            }
        }
    }

    /// What happens to a run.
    public enum Event: Sendable, Equatable {
        /// A worker slot is free and the key is clear.
        case start
        /// The current attempt ended.
        case exited(AttemptResult)
        /// The wait before the next attempt is over.
        case backoffElapsed
        /// Cancel, replace, timeout or shutdown.
        case stop(Stop)
    }

    /// What the conductor must do, in order.
    public enum Effect: Sendable, Equatable {
        /// Record a transition to this phase (and publish it once committed).
        case record(Phase, TransitionDetail)
        /// Start attempt n.
        case launch(attempt: Int)
        /// SIGTERM the attempt's process group, then SIGKILL after the kill grace.
        case terminate
        /// Wait for the backoff after failed attempt n, then send `backoffElapsed`.
        case backoff(attempt: Int)
        /// The run is over: release its key and tell its callers.
        case finish(Phase)
    }

    public private(set) var state: State = .queued
    /// Set when a stop arrives while an attempt runs; the run ends with it when the attempt does.
    public private(set) var stopping: Stop?
    /// The first attempt plus the retries.
    public let maxAttempts: Int

    public init(retries: Int) {
        maxAttempts = 1 + max(retries, 0)
    }

    /// The phase the history shows for the current state.
    public var phase: Phase {
        switch state {
        case .queued: .queued
        case .loading: .loading
        case .retrying: .retrying
        case let .ended(phase): phase
        }
    }

    /// Applies an event; returns the effects to perform. Events that do not apply are ignored.
    public mutating func handle(_ event: Event) -> [Effect] {
        switch (state, event) {
        case (.queued, .start):
            return begin(attempt: 1)
        case let (.queued, .stop(stop)), let (.retrying, .stop(stop)):
            return end(stop.phase, stop.detail)
        case (.loading, .stop(let stop)):
            guard stopping == nil else { return [] }
            stopping = stop
            return [.terminate]
        case let (.loading(attempt), .exited(result)):
            return exited(attempt: attempt, result)
        case let (.retrying(attempt), .backoffElapsed):
            return begin(attempt: attempt + 1)
        default:
            return []
        }
    }

    /// A run whose attempt `attempt` outlived the batond that started it (its `loading` is in the
    /// history): loading that attempt again, launched by attaching to it; its retries go on from it.
    public mutating func resume(attempt: Int) -> [Effect] {
        guard state == .queued else { return [] }
        state = .loading(attempt: attempt)
        return [.launch(attempt: attempt)]
    }

    /// A run a previous batond left waiting to retry after attempt `attempt` (its `retrying` is in
    /// the history): waiting again; the caller arms what is left of its backoff.
    public mutating func resumeRetrying(after attempt: Int) {
        guard state == .queued else { return }
        state = .retrying(attempt: attempt)
    }

    private mutating func begin(attempt: Int) -> [Effect] {
        state = .loading(attempt: attempt)
        return [.record(.loading, TransitionDetail(attempt: attempt)), .launch(attempt: attempt)]
    }

    private mutating func exited(attempt: Int, _ result: AttemptResult) -> [Effect] {
        var detail = TransitionDetail(attempt: attempt, exitCode: result.exitCode, signal: result.signal, error: result.error,
                                      leftovers: result.leftovers, usage: result.usage)
        if let stop = stopping {
            let stopDetail = stop.detail
            detail.reason = stopDetail.reason
            detail.by = stopDetail.by
            detail.via = stopDetail.via
            detail.replacedBy = stopDetail.replacedBy
            detail.error = stopDetail.error
            return end(stop.phase, detail)
        }
        if result.succeeded {
            detail.reason = "exit"
            return end(.success, detail)
        }
        if result.outOfMemory { detail.reason = "oom" }
        if attempt < maxAttempts {
            state = .retrying(attempt: attempt)
            return [.record(.retrying, detail), .backoff(attempt: attempt)]
        }
        detail.reason = result.outOfMemory ? "oom" : result.started ? "exit" : "start"
        return end(.failure, detail)
    }

    private mutating func end(_ phase: Phase, _ detail: TransitionDetail) -> [Effect] {
        state = .ended(phase)
        return [.record(phase, detail), .finish(phase)]
    }
}
