import BatonCore

/// A trigger in flight: its run's updates as they come, and its outcome.
public struct RunHandle: Sendable {
    /// The run's updates: one per transition committed after the trigger was decided
    /// (`transition` set; a run that starts at once is first seen `loading`), one per progress
    /// report (`transition` nil), and last the run as it ended (`transition` nil), from the
    /// trigger's final answer; or it throws the trigger's refusal, or `.unavailable`. Iterating is
    /// optional: the outcome comes either way.
    public let updates: AsyncThrowingStream<RunUpdate, any Error>
    private let answer: Answer<RunOutcome>
    private let leaving: @Sendable () -> Void

    init(updates: AsyncThrowingStream<RunUpdate, any Error>, answer: Answer<RunOutcome>, leaving: @escaping @Sendable () -> Void) {
        self.updates = updates
        self.answer = answer
        self.leaving = leaving
    }

    /// How the run ended, with the errors of `BatonClient.run`. Cancelling the awaiting task
    /// leaves the run (it goes on in batond) and throws `CancellationError`.
    public var outcome: RunOutcome {
        get async throws {
            try await withTaskCancellationHandler { try await answer.value } onCancel: { leaving() }
        }
    }

    /// Stops following the run without cancelling it: `updates` and `outcome` throw
    /// `CancellationError` (batond is told nothing). To stop the run itself, `BatonClient.cancel(run:)`.
    public func leave() { leaving() }
}
