import BatonCore

/// A run's output as `BatonClient.output(run:from:follow:)` reads it: its chunks as they come,
/// then where the output sent ends.
public struct RunOutput: Sendable {
    /// The chunks from the position asked for, in order: what the history keeps, then (when
    /// following) each chunk as the run writes it. A chunk that starts past the previous one's end
    /// marks bytes the history dropped between. The sequence ends with batond's final answer, or
    /// throws its refusal (`.unknownRun`, `.forbidden`) or `.unavailable`: resume with a new client
    /// from the end of the last chunk, and nothing is missed or repeated.
    public let chunks: AsyncThrowingStream<OutputChunk, any Error>
    private let answer: Answer<OutputEnd>
    private let leaving: @Sendable () -> Void

    init(chunks: AsyncThrowingStream<OutputChunk, any Error>, answer: Answer<OutputEnd>, leaving: @escaping @Sendable () -> Void) {
        self.chunks = chunks
        self.answer = answer
        self.leaving = leaving
    }

    /// The final answer: the run (when following, as it ended), where the output sent ends and
    /// how many bytes the history dropped; or the errors of `chunks`. Cancelling the awaiting
    /// task leaves the request and throws `CancellationError`.
    public var end: OutputEnd {
        get async throws {
            try await withTaskCancellationHandler { try await answer.value } onCancel: { leaving() }
        }
    }

    /// Stops reading: `chunks` and `end` throw `CancellationError` (batond is told nothing).
    public func leave() { leaving() }
}

/// Where a run's output read ended, as the final answer of `output` says it.
public struct OutputEnd: Sendable, Equatable {
    /// The run as batond had it when it answered (ended, when following).
    public var run: RunSnapshot
    /// Where the output sent ends: the position to resume from.
    public var position: Int64?
    /// How many bytes of the run's output the history dropped (past its `output.keep`).
    public var dropped: Int64?

    public init(run: RunSnapshot, position: Int64?, dropped: Int64?) {
        self.run = run
        self.position = position
        self.dropped = dropped
    }
}
