@testable import baton
import BatonClient
import BatonCore
import Foundation
import Testing

/// The bridge from a synchronous command to an async call: the caller waits for the call's end
/// however long it suspends, and gets its value or its error.
@Suite("Blocking: a synchronous caller gets an async call's result")
struct BlockingTests {
    /// Runs `body` on a thread of its own, as the CLI's main thread is: never one of the pool the call needs.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    @Test("the caller waits while the call is suspended, and returns the value once another thread answers it")
    func waitsForTheAnswer() async throws {
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let (answers, answer) = AsyncStream<Int>.makeStream()
        let returned = Locked(false)
        async let result = Self.onThread {
            defer { returned.withLock { $0 = true } }
            return Result {
                try Blocking.run { () async -> Int in
                    didStart.yield()
                    for await value in answers { return value }
                    return -1
                }
            }
        }
        for await _ in started { break }
        #expect(!returned.withLock { $0 }, "Blocking.run returned before its call had an answer")
        answer.yield(42)
        #expect(try await result.get() == 42)
    }

    @Test("an error the call throws reaches the caller as it was thrown")
    func passesTheError() async {
        let error = BatonClientError.unavailable("lost batond at /tmp/x.sock: batond closed the connection before answering")
        let result = await Self.onThread { Result { try Blocking.run { () async throws -> Int in throw error } } }
        #expect(throws: error) { try result.get() }
    }
}
