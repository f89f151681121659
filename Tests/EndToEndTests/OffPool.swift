import Foundation
import Testing

/// Every test of a suite run off the cooperative pool. Swift Testing calls a synchronous test
/// function from the async thunk its `@Test` macro writes, on the thread that thunk's task runs
/// on: one of the cooperative pool's, of which there are as many as cores (two here). A test
/// that blocks while it waits (batond's log, a CLI to its end, `Eventually`'s naps, a read, a
/// semaphore) holds a pool thread; two of them held the whole pool, and an async test's task (a
/// watch, a gate's nap, a `Task.sleep`'s wake) waited for a thread for as long as they blocked
/// (`RestartAnswerTests.clientWatchRidesItOut` and `LockWaitTests` ran out so on 2 cores).
///
/// Under this trait a test waits for one of its target's `TestSlots`, then its task prefers
/// `OffPoolThreads`: the synchronous function, every wait it makes, and the async test's code
/// between its awaits run on threads that nothing else runs on meanwhile, and so do its `async
/// let`s and task groups (children inherit the preference). An unstructured `Task {}` a test
/// starts, and the library's own tasks, run on the pool, which no test holds now; a test that waits
/// for a task of its own starts it with `Task(executorPreference: OffPoolThreads.shared)`, or it
/// queues there behind the synchronous tests still on the pool (`ServerQuiesceTests`): at a full
/// run's start that queue was over a minute deep, so a bound raced against such a task measures
/// the queue (a library's own task, which a test cannot move, is waited for with a long bound). A test's
/// `.slotTimeLimit` counts from when it has its slot. Every end-to-end suite carries it
/// (`LayoutTests.endToEndSuitesOffPool`), and so do the in-process suites whose tests block;
/// test targets share no module, so those compile this file through a link to it.
struct OffPoolTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }
    /// Whose slots it takes: the target's, or a test's own (`OffPoolTests`).
    var slots = TestSlots.shared

    /// Whether the current task is a test's that has its slot. A test gets one scope per
    /// `.offPool` among its traits (Swift Testing nests them, one per trait: its own and each
    /// suite's around it); only the outermost takes a slot, else two such tests each holding one
    /// of two slots would wait for the other's for ever.
    @TaskLocal static var admitted = false

    /// A scope for each test case; the suite itself runs nothing of its own.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        if Self.admitted { return try await function() }
        let asked = ContinuousClock.now
        await slots.enter()
        defer { slots.leave() }
        let waited = ContinuousClock.now - asked
        try await Self.$admitted.withValue(true) {
            try await withTaskExecutorPreference(OffPoolThreads.shared) {
                guard let limit = SlotTimeLimit.limit(of: test) else { return try await function() }
                try await limit.bounding(function, waited: waited, at: test.sourceLocation)
            }
        }
    }
}

/// How many of a target's `.offPool` tests run at once. The pool's width bounded it while their
/// bodies ran there (a synchronous test held a pool thread from start to end: two at once on 2
/// cores); off the pool nothing did, and every test of the run started together: dozens of
/// batonds and fleets at once on 2 cores, and tests that wait for a daemon's answer ran out of
/// time (ci27a of session 27). A test waits for a slot suspended, holding no thread; the slots
/// are as many as cores (at least 2), or `BATON_E2E_PARALLEL`. Swift Testing's `.timeLimit`
/// counts the wait too (it applies it around this trait's scope), so these tests bound themselves
/// with `.slotTimeLimit`, which counts from the slot (`LayoutTests.limitsFromTheSlot`).
final class TestSlots: @unchecked Sendable {  // `free` and `waiting`: under `lock`
    static let shared = TestSlots(count: ProcessInfo.processInfo.environment["BATON_E2E_PARALLEL"].flatMap(Int.init)
                                  ?? max(2, ProcessInfo.processInfo.activeProcessorCount))
    private let lock = NSLock()
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = max(1, count) }

    /// How many slots are free now.
    var available: Int { lock.withLock { free } }

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

/// A test's time limit counted from when it has its slot (`OffPoolTrait`), not from when it asked
/// for one: a test that waited for its slot while others ran still has all of its own time. At
/// the bound it records an issue that names the bound and the wait, and cancels the test's task
/// (as Swift Testing's `.timeLimit` does; a test blocked in a synchronous wait ends when that wait
/// does). Read only by `.offPool`: elsewhere it would bound nothing, so a test that has it and no
/// `.offPool` gets an issue saying so (and runs unbounded). The tightest of a test's and its
/// suites' applies.
struct SlotTimeLimit: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }
    let limit: Duration

    /// Whether `test` has this trait's kind without `.offPool`, which alone reads it.
    static func misplaced(in test: Test) -> Bool {
        test.traits.contains { $0 is SlotTimeLimit } && !test.traits.contains { $0 is OffPoolTrait }
    }

    /// A scope only for a test case it would not bound: there it reports itself.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase != nil && Self.misplaced(in: test) ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        Issue.record(Comment(rawValue: ".slotTimeLimit(\(limit)) bounds nothing without .offPool: give the suite .offPool, or use .timeLimit"),
                     sourceLocation: test.sourceLocation)
        try await function()
    }

    /// The tightest limit among a test's traits (its own and its suites'), if any.
    static func limit(of test: Test) -> SlotTimeLimit? {
        test.traits.compactMap { $0 as? SlotTimeLimit }.min { $0.limit < $1.limit }
    }

    /// Runs `body`, recording an issue (at `sourceLocation`: the test's) and cancelling it if it is
    /// still running `limit` from now.
    func bounding(_ body: @Sendable () async throws -> Void, waited: Duration = .zero,
                  at sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await withoutActuallyEscaping(body) { body in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Cancelled (the body ended first): no issue.
                    try await Task.sleep(for: limit)
                    Issue.record(Comment(rawValue: "ran past its time limit of \(limit) counted from its slot"
                                             + " (.slotTimeLimit; it waited \(waited) for the slot before)"), sourceLocation: sourceLocation)
                }
                group.addTask { try await body() }
                defer { group.cancelAll() }
                // The first to end: the body (its error is the test's), or the bound, which cancels
                // the body; the group then waits for it, and drops what it throws.
                try await group.next()
            }
        }
    }
}

extension Trait where Self == OffPoolTrait {
    /// The suite's tests run on threads of their own, never the cooperative pool's (`OffPoolTrait`).
    static var offPool: Self { OffPoolTrait() }
}

extension Trait where Self == SlotTimeLimit {
    /// A time limit counted from when the test has its slot (`SlotTimeLimit`); only under `.offPool`.
    static func slotTimeLimit(_ limit: Duration) -> Self { SlotTimeLimit(limit: limit) }
}

/// A task executor that runs each job on a thread of its own: one of its idle threads if one
/// is idle, else a new one; never a busy one, so a job that blocks holds only its own thread and
/// no job waits behind it. A thread that has run its job is idle until it is given the next, or
/// until it has been idle for `idleLimit`: then it ends (a run of hundreds of tests kept every
/// thread it had ever needed at once). A task's jobs follow one another, so a test runs on one
/// thread at a time; a test's concurrent children run on as many as they are.
final class OffPoolThreads: TaskExecutor, @unchecked Sendable {  // `idle`, `made` and `ended`: under `lock`
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

    /// How long a thread waits idle for a job before it ends.
    let idleLimit: Duration
    private let lock = NSLock()
    /// The idle threads, the latest idle last: a job takes the last, so the first idle longest end.
    private var idle: [Worker] = []
    private var made = 0
    private var ended = 0

    init(idleLimit: Duration = .seconds(10)) { self.idleLimit = idleLimit }

    /// How many threads it has made, how many of them are idle now, and how many live (idle or busy).
    var threads: (made: Int, idle: Int, live: Int) { lock.withLock { (made, idle.count, made - ended) } }

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

    /// A thread's life: its job, then idle until given the next, or until it ends.
    private func serve(_ worker: Worker) {
        Thread.current.threadDictionary[Self.mark] = worker.number
        let executor = asUnownedTaskExecutor()
        repeat {
            worker.job.take()?.runSynchronously(on: executor)
            lock.withLock { idle.append(worker) }
        } while given(worker)
    }

    /// Waits idle for the worker's next job: true when it was given one, false when it waited
    /// `idleLimit` and has left the idle set (no job can be given to it after that). One that was
    /// taken from the idle set as it stopped waiting has its job on the way: it waits for it.
    private func given(_ worker: Worker) -> Bool {
        let (seconds, attoseconds) = idleLimit.components
        let limit = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        while worker.given.wait(timeout: .now() + limit) == .timedOut {
            let left = lock.withLock { () -> Bool in
                guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
                idle.remove(at: index)
                ended += 1
                return true
            }
            if left { return false }
        }
        return true
    }
}

extension DispatchTime {
    /// The deadline of a test's wait for an event another thread produces (a worker's reply, a
    /// spawn's end): the harness's usual 30 s from now (`Eventually`'s default). A deadlock guard,
    /// not a speed: 10 s raced the event on a loaded machine (`FleetArtifactRetryTests`), and in a
    /// full run a dozen `.offPool` tests of six targets run at once beside the pool's.
    static var usualWait: DispatchTime { .now() + .seconds(30) }
}
