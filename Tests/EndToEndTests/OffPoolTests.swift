import Foundation
import Testing

/// `.offPool` (OffPool.swift): an end-to-end test, and the tasks it waits on, never hold a thread
/// of the cooperative pool.
@Suite("Harness: end-to-end tests run off the cooperative pool", .offPool)
struct OffPoolTests {
    static var onOwnThread: Bool { OffPoolThreads.isCurrent }

    /// Blocks its thread until `semaphore` is signalled (30 s at most); whether it was.
    static func blocked(on semaphore: DispatchSemaphore) -> Bool {
        semaphore.wait(timeout: .now() + 30) == .success
    }

    @Test("a synchronous test runs on a thread of its own")
    func synchronous() {
        #expect(Self.onOwnThread)
    }

    @Test("an async test runs on threads of its own, after an await too, and so do its async let and task group children")
    func asynchronous() async {
        #expect(Self.onOwnThread)
        await Task.yield()
        #expect(Self.onOwnThread)
        async let child = Self.onOwnThread
        #expect(await child)
        let children = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<3 { group.addTask { Self.onOwnThread } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(children == [true, true, true])
    }

    @Test("a job runs on an idle thread where one is, and on a new one where all are busy")
    func reusesIdleThreads() async {
        let threads = OffPoolThreads()
        func ran() async -> Int? { await Task(executorPreference: threads) { OffPoolThreads.current }.value }
        let first = await ran()
        #expect(first != nil)
        // Idle once its job has returned (just after the task's value is handed over).
        guard await Eventually.untilAwaited("the first thread idle", { threads.threads.idle == 1 }) else { return }
        #expect(await ran() == first, "the idle thread ran the next job")
        #expect(threads.threads.made == 1)
        guard await Eventually.untilAwaited("the first thread idle again", { threads.threads.idle == 1 }) else { return }
        // A job while that thread is busy (blocked until the next job has run) gets a new thread.
        let release = DispatchSemaphore(value: 0)
        let busy = Task(executorPreference: threads) { (OffPoolThreads.current, Self.blocked(on: release)) }
        #expect(threads.threads.idle == 0, "given to the job as it was enqueued")
        let second = await ran()
        release.signal()
        let (blocked, released) = await busy.value
        #expect(blocked == first && released)
        #expect(second != nil && second != first, "not queued behind the busy thread")
        #expect(threads.threads.made == 2)
    }

    @Test("more blocked children than the pool has threads: a task on the pool still runs, and releases them")
    func blockingLeavesThePool() async {
        let release = DispatchSemaphore(value: 0)
        let count = 4 * ProcessInfo.processInfo.activeProcessorCount + 1
        let released = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count { group.addTask { Self.blocked(on: release) } }
            // Were the children on the pool, they would hold all of it, and this would wait for
            // the first of them to give up.
            Task(executorPreference: globalConcurrentExecutor) { for _ in 0..<count { release.signal() } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(released == count, "children released by a task of the pool: \(released) of \(count)")
    }
}
