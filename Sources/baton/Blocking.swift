import BatonCore
import FoundationEssentials

/// The bridge from the CLI's synchronous commands to `BatonClient`'s async calls: the calling
/// thread waits while the call runs as a task of its own, then gets its result or its error.
/// Called from a thread outside Swift's cooperative pool only (the CLI's main thread), since the
/// call needs that pool while the caller waits.
enum Blocking {
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        try run(carrying: ()) { _ in try await operation() }.result.get()
    }

    /// As above, `state` going into the task and coming back with its result, however it ended:
    /// the task owns it while it runs, the calling thread again once it has ended.
    static func run<T: Sendable, State: Sendable>(carrying state: State,
                                                  _ operation: @escaping @Sendable (inout State) async throws -> T)
        -> (result: Result<T, any Error>, state: State) {
        // The task hands its result over once; this thread waits for it.
        let ended = OneShot<(result: Result<T, any Error>, state: State)>()
        Task.detached {
            var state = state
            do {
                let value = try await operation(&state)
                ended.set((.success(value), state))
            } catch {
                ended.set((.failure(error), state))
            }
        }
        return ended.wait()
    }
}
