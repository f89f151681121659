import BatonCore

/// A result that comes once and may be awaited by any number of tasks: a channel, not shared
/// state. The result goes through a stream to a task of its own, whose value every awaiting task
/// reads; the first result stands (the stream keeps it and then is finished).
final class Answer<Value: Sendable>: Sendable {
    private let delivery: AsyncThrowingStream<Value, any Error>.Continuation
    private let result: Task<Value, any Error>

    init() {
        let (stream, delivery) = AsyncThrowingStream<Value, any Error>.makeStream(bufferingPolicy: .bufferingOldest(1))
        self.delivery = delivery
        result = Task {
            for try await value in stream { return value }
            // Finished without a result: only when the answer itself was let go of (deinit).
            throw CancellationError()
        }
    }

    deinit { delivery.finish(throwing: CancellationError()) }

    var value: Value {
        get async throws { try await result.value }
    }

    /// Sets the result (the first one wins) and resumes every task awaiting it.
    func finish(_ result: Result<Value, any Error>) {
        switch result {
        case let .success(value):
            delivery.yield(value)
            delivery.finish()
        case let .failure(error):
            delivery.finish(throwing: error)
        }
    }
}
