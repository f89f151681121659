import BatonCore
import Dispatch
import FoundationEssentials

/// The bridge from the CLI's synchronous commands to `BatonClient`'s async calls: the calling
/// thread waits while the call runs as a task of its own, then gets its result or its error.
/// Called from a thread outside Swift's cooperative pool only (the CLI's main thread), since the
/// call needs that pool while the caller waits.
enum Blocking {
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                let value = try await operation()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        // The task set the result before it signalled.
        return try result.withLock { $0! }.get()
    }
}
