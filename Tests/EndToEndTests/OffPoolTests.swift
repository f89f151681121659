import Foundation
import Testing

/// `.offPool` (OffPool.swift): an end-to-end test, and the tasks it waits on, never hold a thread
/// of the cooperative pool.
@Suite("Harness: end-to-end tests run off the cooperative pool", .offPool)
struct OffPoolTests {
    static var onOwnThread: Bool { ThreadPerJob.isCurrent }

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
