import BatonCore

/// A result that comes once and may be awaited by any number of tasks.
final class Answer<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, any Error>])
        case done(Result<Value, any Error>)
    }

    private let state = Locked(State.waiting([]))

    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let done = state.withLock { state -> Result<Value, any Error>? in
                    switch state {
                    case let .done(result): return result
                    case var .waiting(list):
                        list.append(continuation)
                        state = .waiting(list)
                        return nil
                    }
                }
                if let done { continuation.resume(with: done) }
            }
        }
    }

    /// Sets the result (the first one wins) and resumes every task awaiting it.
    func finish(_ result: Result<Value, any Error>) {
        let waiting = state.withLock { state -> [CheckedContinuation<Value, any Error>] in
            guard case let .waiting(list) = state else { return [] }
            state = .done(result)
            return list
        }
        for continuation in waiting { continuation.resume(with: result) }
    }
}
