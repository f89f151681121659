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
/// Under this trait a test's task prefers `OffPoolThreads`: the synchronous function, every wait it
/// makes, and the async test's code between its awaits run on threads that nothing else runs on
/// meanwhile, and so do its `async let`s and task groups (children inherit the preference). An unstructured
/// `Task {}` a test starts, and the library's own tasks, run on the pool, which no test holds now.
/// `LayoutTests.endToEndSuitesOffPool` checks that every end-to-end suite carries it.
struct OffPoolTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// A scope for each test case; the suite itself runs nothing of its own.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await TestSlots.shared.enter()
        defer { TestSlots.shared.leave() }
        try await withTaskExecutorPreference(OffPoolThreads.shared) { try await function() }
    }
}

/// How many end-to-end tests run at once. The pool's width bounded it while their bodies ran
/// there (a synchronous test held a pool thread from start to end: two at once on 2 cores); off
/// the pool nothing did, and every test of the run started together: dozens of batonds and fleets at
/// once on 2 cores, and tests that wait for a daemon's answer ran out of time (ci27a of session
/// 27). A test waits for a slot suspended, holding no thread; the slots are as many as cores (at
/// least 2), or `BATON_E2E_PARALLEL`. A `.timeLimit` counts the wait too (Swift Testing applies it
/// around this trait's scope): such a limit must cover the whole end-to-end run, not one test.
final class TestSlots: @unchecked Sendable {  // `free` and `waiting`: under `lock`
    static let shared = TestSlots(count: ProcessInfo.processInfo.environment["BATON_E2E_PARALLEL"].flatMap(Int.init)
                                  ?? max(2, ProcessInfo.processInfo.activeProcessorCount))
    private let lock = NSLock()
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = max(1, count) }

    /// Takes a slot, waiting (suspended) for one in the order asked.
    func enter() async {
        await withCheckedContinuation { (slot: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if free > 0 { free -= 1; return true }
                waiting.append(slot)
                return false
            }
            if now { slot.resume() }
        }
    }

    /// Gives the slot to the first waiting, or back.
    func leave() {
        let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if waiting.isEmpty { free += 1; return nil }
            return waiting.removeFirst()
        }
        next?.resume()
    }
}

extension Trait where Self == OffPoolTrait {
    /// The suite's tests run on threads of their own, never the cooperative pool's (`OffPoolTrait`).
    static var offPool: Self { OffPoolTrait() }
}

/// A task executor that runs each job on a thread of its own: one of its idle threads if one
/// is idle, else a new one; never a busy one, so a job that blocks holds only its own thread and
/// no job waits behind it. A thread that has run its job is idle until it is given the next. A
/// task's jobs follow one another, so a test runs on one thread at a time; a test's concurrent
/// children run on as many as they are. Threads are made as many as jobs ran at once at most.
final class OffPoolThreads: TaskExecutor, @unchecked Sendable {  // `idle` and `made`: under `lock`
    static let shared = OffPoolThreads()
    /// Marks its threads with their number (in their `threadDictionary`: Foundation's
    /// `Thread.name` on Linux answers the name of the thread that made it, not the one given).
    private static let mark = "baton-test-off-pool"

    /// The number of the caller's thread if it is one of an executor's (1, 2, … in the order
    /// that executor made them; `OffPoolTests`).
    static var current: Int? { Thread.current.threadDictionary[mark] as? Int }
    static var isCurrent: Bool { current != nil }

    /// A thread of the executor's: idle, or running the job it was given.
    private final class Worker: @unchecked Sendable {  // `job`: written before `given` is signalled (or the thread made), read after
        let number: Int
        let given = DispatchSemaphore(value: 0)
        var job: UnownedJob?
        init(number: Int) { self.number = number }
    }

    private let lock = NSLock()
    private var idle: [Worker] = []
    private var made = 0

    /// How many threads it has made, and how many of them are idle now.
    var threads: (made: Int, idle: Int) { lock.withLock { (made, idle.count) } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (worker, isNew) = lock.withLock { () -> (Worker, Bool) in
            if let worker = idle.popLast() { return (worker, false) }
            made += 1
            return (Worker(number: made), true)
        }
        worker.job = job
        if isNew { Thread.detachNewThread { self.serve(worker) } } else { worker.given.signal() }
    }

    /// A thread's life: its job, then idle until given the next.
    private func serve(_ worker: Worker) {
        Thread.current.threadDictionary[Self.mark] = worker.number
        let executor = asUnownedTaskExecutor()
        while true {
            worker.job.take()?.runSynchronously(on: executor)
            lock.withLock { idle.append(worker) }
            worker.given.wait()
        }
    }
}
