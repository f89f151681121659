import Foundation
import Testing

/// Every test of a suite run off the cooperative pool. Swift Testing calls a synchronous test
/// function from the async thunk its `@Test` macro writes, on the thread that thunk's task runs
/// on: one of the cooperative pool's, of which there are as many as cores (two here). An
/// end-to-end test blocks while it waits (batond's log, a CLI to its end, `Eventually`'s naps, a
/// read, a semaphore), so two of them held the whole pool, and an async test's task (a watch, a
/// gate's nap, a `Task.sleep`'s wake) waited for a thread for as long as they blocked
/// (`RestartAnswerTests.clientWatchRidesItOut` and `LockWaitTests` ran out so on 2 cores).
///
/// Under this trait a test's task prefers `ThreadPerJob`: the synchronous function, every wait it
/// makes, and the async test's code between its awaits run on threads of the test's own, and so
/// do its `async let`s and task groups (children inherit the preference). An unstructured
/// `Task {}` a test starts, and the library's own tasks, run on the pool, which no test holds now.
/// `LayoutTests.endToEndSuitesOffPool` checks that every end-to-end suite carries it.
struct OffPoolTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// A scope for each test case; the suite itself runs nothing of its own.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(ThreadPerJob.shared) { try await function() }
    }
}

extension Trait where Self == OffPoolTrait {
    /// The suite's tests run on threads of their own, never the cooperative pool's (`OffPoolTrait`).
    static var offPool: Self { OffPoolTrait() }
}

/// A task executor that runs each job it is given on a new thread: a job that blocks holds only
/// its own thread. A task's jobs follow one another, so a test runs on one thread at a time;
/// a test's concurrent children run on as many as they are.
final class ThreadPerJob: TaskExecutor {
    static let shared = ThreadPerJob()
    /// Marks its threads (in their `threadDictionary`: Foundation's `Thread.name` on Linux
    /// answers the name of the thread that made it, not the one given).
    private static let mark = "baton-test-off-pool"

    /// Whether the caller runs on one of its threads (`OffPoolTests`).
    static var isCurrent: Bool { Thread.current.threadDictionary[mark] != nil }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread.detachNewThread {
            Thread.current.threadDictionary[Self.mark] = true
            job.runSynchronously(on: executor)
        }
    }
}
