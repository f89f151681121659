@testable import BatonRuntime
@testable import BatonCore
@testable import BatonEngine
import Dispatch
import Foundation
import Testing

/// The worker with its real thread. Every wait is on a gate or a semaphore that the worker's
/// own progress opens; the timeouts only keep a broken worker from hanging the suite.
@Suite(.offPool) struct SerialWorkerTests {
    /// A job that says who sent it and its number, and is told when it was done.
    struct Job: Sendable {
        var sender = 0
        var number: Int
        var done: (@Sendable (Int) -> Void)?
    }

    /// Everything the handler saw, batch by batch.
    final class Log: Sendable {
        private let batches = Locked<[[Int]]>([])
        func add(_ batch: [Int]) { batches.withLock { $0.append(batch) } }
        var all: [[Int]] { batches.withLock { $0 } }
        var jobs: [Int] { all.flatMap { $0 } }
    }

    static func worker(capacity: Int = 100, maxBatch: Int = 1, log: Log,
                       _ body: @escaping @Sendable (inout Int, inout SerialWorker<Job>.Batch) -> Void = { _, _ in })
        -> SerialWorker<Job> {
        SerialWorker(name: "test-worker", capacity: capacity, maxBatch: maxBatch, state: 0) { calls, batch in
            calls += 1
            log.add(batch.jobs.map(\.number))
            body(&calls, &batch)
            for job in batch.jobs where !batch.retried.contains(where: { $0.number == job.number }) { job.done?(job.number) }
        }
    }

    @Test func jobsRunInOrderOnTheWorkersThread() throws {
        let log = Log()
        let names = Locked<Set<String>>([])
        let worker = Self.worker(capacity: 1_000, log: log) { _, _ in names.withLock { _ = $0.insert(Thread.current.name ?? "") } }
        for number in 0..<500 { try worker.submit(Job(number: number)) }
        #expect(worker.close().count == 0)
        #expect(log.jobs == Array(0..<500))
        #expect(names.withLock { $0 } == ["test-worker"])
    }

    @Test func concurrentSubmittersLoseNoCompletionAndKeepTheirOwnOrder() async throws {
        let log = Log()
        let completed = Locked<[Int: [Int]]>([:])
        let worker = Self.worker(capacity: 10_000, maxBatch: 64, log: log)
        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<4 {
                group.addTask {
                    for number in 0..<500 {
                        try? worker.submit(Job(sender: sender, number: sender * 1_000 + number) { done in
                            completed.withLock { $0[sender, default: []].append(done) }
                        })
                    }
                }
            }
        }
        #expect(worker.close().count == 0)
        let heard = completed.withLock { $0 }
        for sender in 0..<4 { #expect(heard[sender] == Array(sender * 1_000..<sender * 1_000 + 500)) }
        #expect(log.jobs.count == 2_000 && log.all.allSatisfy { $0.count <= 64 })
    }

    @Test func aFullQueueRefusesBoundedSubmitsUntilItDrains() throws {
        let log = Log()
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let worker = Self.worker(capacity: 3, log: log) { _, batch in
            if batch.jobs.first?.number == 0 {
                started.signal()
                gate.wait()
            }
        }
        try worker.submit(Job(number: 0))
        #expect(started.wait(timeout: .usualWait) == .success)
        for number in 1...3 { try worker.submit(Job(number: number)) }
        #expect(throws: WorkerRefusal.full) { try worker.submit(Job(number: 4)) }
        try worker.submit(Job(number: 5), bounded: false)
        #expect(worker.queued == 4)
        gate.signal()
        #expect(worker.close().count == 0)
        #expect(log.jobs == [0, 1, 2, 3, 5])
        #expect(throws: WorkerRefusal.closed) { try worker.submit(Job(number: 6), bounded: false) }
    }

    @Test func jobsThatArriveDuringABatchGoTogetherInTheNext() throws {
        let log = Log()
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let worker = Self.worker(maxBatch: 10, log: log) { _, batch in
            if batch.jobs.first?.number == 0 {
                started.signal()
                gate.wait()
            }
        }
        try worker.submit(Job(number: 0))
        #expect(started.wait(timeout: .usualWait) == .success)
        for number in 1...25 { try worker.submit(Job(number: number)) }
        gate.signal()
        worker.close()
        #expect(log.all == [[0], Array(1...10), Array(11...20), Array(21...25)])
    }

    @Test func aRetriedJobComesBackAheadOfNewerOnes() throws {
        let log = Log()
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let completions = Locked<[Int]>([])
        let worker = Self.worker(maxBatch: 10, log: log) { calls, batch in
            guard calls == 1 else { return }
            started.signal()
            gate.wait()
            batch.retry(batch.jobs, after: .zero)
        }
        let done: @Sendable (Int) -> Void = { number in completions.withLock { $0.append(number) } }
        try worker.submit(Job(number: 1, done: done))
        #expect(started.wait(timeout: .usualWait) == .success)
        try worker.submit(Job(number: 2, done: done))
        try worker.submit(Job(number: 3, done: done))
        gate.signal()
        worker.close()
        #expect(log.all == [[1], [1, 2, 3]])
        #expect(completions.withLock { $0 } == [1, 2, 3])
    }

    @Test func aPingIsAnsweredWhileARetryWaitsAndCloseLetsTheHandlerGiveUp() throws {
        let log = Log()
        let closingSeen = Locked(false)
        let worker = Self.worker(log: log) { _, batch in
            if batch.isClosing {
                closingSeen.withLock { $0 = true }
            } else {
                batch.retry(batch.jobs, after: .seconds(3_600))
            }
        }
        try worker.submit(Job(number: 1))
        let answered = DispatchSemaphore(value: 0)
        worker.ping { answered.signal() }
        #expect(answered.wait(timeout: .usualWait) == .success)
        #expect(worker.queued <= 1)
        #expect(worker.close(timeout: .seconds(10)).count == 0)
        #expect(closingSeen.withLock { $0 })
        #expect(log.all == [[1], [1]])
        worker.ping { answered.signal() }
        #expect(answered.wait(timeout: .now()) == .success)
    }

    @Test func closeWaitsForWhatIsQueued() throws {
        let log = Log()
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let worker = Self.worker(log: log) { _, batch in
            if batch.jobs.first?.number == 0 {
                started.signal()
                gate.wait()
            }
        }
        try worker.submit(Job(number: 0))
        #expect(started.wait(timeout: .usualWait) == .success)
        for number in 1...5 { try worker.submit(Job(number: number)) }
        let closed = DispatchSemaphore(value: 0)
        let result = Locked<Int?>(nil)
        Thread {
            result.withLock { $0 = worker.close().count }
            closed.signal()
        }.start()
        #expect(closed.wait(timeout: .now() + .milliseconds(20)) == .timedOut)
        gate.signal()
        #expect(closed.wait(timeout: .usualWait) == .success)
        #expect(result.withLock { $0 } == 0)
        #expect(log.jobs == Array(0...5))
    }

    @Test func closeThatRunsOutOfTimeReturnsWhatItLeft() throws {
        let log = Log()
        let started = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let worker = Self.worker(log: log) { _, batch in
            if batch.jobs.first?.number == 0 {
                started.signal()
                gate.wait()
            }
        }
        try worker.submit(Job(number: 0))
        #expect(started.wait(timeout: .usualWait) == .success)
        for number in 1...3 { try worker.submit(Job(number: number)) }
        let left = worker.close(timeout: .milliseconds(20))
        #expect(left.abandoned.map(\.number) == [1, 2, 3])
        #expect(left.running == 1)
        gate.signal()
        #expect(worker.close().count == 0)
        #expect(log.jobs == [0])
    }

    @Test func anIdleThreadEndsAndTheNextJobStartsOneThatTakesTheStateOver() throws {
        let seen = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        let worker = SerialWorker<Job>(name: "test-idle", capacity: 10, idleTimeout: .milliseconds(1), state: 0) { calls, batch in
            calls += 1
            seen.withLock { $0.append(calls) }
            done.signal()
        }
        for number in 1...2 {
            try worker.submit(Job(number: number))
            #expect(done.wait(timeout: .usualWait) == .success)
            #expect(worker.endedIdle.wait(timeout: .usualWait) == .success)
        }
        let answered = DispatchSemaphore(value: 0)
        worker.ping { answered.signal() }
        #expect(answered.wait(timeout: .now()) == .success)
        #expect(worker.close().count == 0)
        #expect(seen.withLock { $0 } == [1, 2])
    }

    /// A state that says when it is freed (a connection's `deinit` closes it).
    final class Freed {
        let freed: DispatchSemaphore
        init(_ freed: DispatchSemaphore) { self.freed = freed }
        deinit { freed.signal() }
    }

    /// A closed worker frees its state (closes its connection: SQLite's checkpoint of the WAL, a
    /// PostgreSQL session) before `close` returns, whether its thread ended closed, ended idle
    /// before, or never started, while the worker object itself is still alive.
    @Test func closeFreesTheStateBeforeItReturns() throws {
        for ending in ["closed", "idle", "never started"] {
            let freed = DispatchSemaphore(value: 0), ran = DispatchSemaphore(value: 0)
            let worker = SerialWorker<Job>(name: "test-freed", capacity: 10, idleTimeout: ending == "idle" ? .milliseconds(1) : nil,
                                           state: Freed(freed)) { _, _ in ran.signal() }
            if ending != "never started" {
                try worker.submit(Job(number: 1))
                #expect(ran.wait(timeout: .usualWait) == .success)
            }
            if ending == "idle" { #expect(worker.endedIdle.wait(timeout: .usualWait) == .success) }
            #expect(freed.wait(timeout: .now()) == .timedOut, "\(ending): freed before close")
            #expect(worker.close().count == 0)
            #expect(freed.wait(timeout: .now()) == .success, "\(ending): not freed when close returned")
            withExtendedLifetime(worker) {}
        }
    }

    /// Two threads running a batch at once (a broken queue) stop the process, naming the worker,
    /// where waiting for the state's lock would let batch N+1 commit before batch N.
    @Test func aBatchWhileAnotherThreadHoldsTheStateStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let owned = Owned(0)
            let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            Thread {
                owned.state.withLock { _ in
                    holding.signal()
                    _ = release.wait(timeout: .usualWait)
                }
            }.start()
            holding.wait()
            var batch = 0
            owned.withState("test-worker", &batch) { state, _ in state += 1 }
        }
        let said = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(said.contains("test-worker: two threads ran a batch at once"), "\(said)")
    }

    @Test func completionsPostedToTheReactorRunThereInOrder() throws {
        let reactorThread = Locked<pthread_t?>(nil)
        let known = DispatchSemaphore(value: 0)
        let reactor = Reactor()
        reactor.after(.zero) {
            reactorThread.withLock { $0 = pthread_self() }
            known.signal()
        }
        #expect(known.wait(timeout: .usualWait) == .success)
        let log = Log()
        let workerThread = Locked<pthread_t?>(nil)
        let heard = Locked<[(Int, pthread_t)]>([])
        let all = DispatchSemaphore(value: 0)
        let worker = Self.worker(maxBatch: 8, log: log) { _, _ in workerThread.withLock { $0 = pthread_self() } }
        for number in 0..<100 {
            try worker.submit(Job(number: number) { done in
                reactor.after(.zero) {
                    heard.withLock { $0.append((done, pthread_self())) }
                    if done == 99 { all.signal() }
                }
            })
        }
        #expect(all.wait(timeout: .usualWait) == .success)
        worker.close()
        let events = heard.withLock { $0 }
        #expect(events.map(\.0) == Array(0..<100))
        let loop = try #require(reactorThread.withLock { $0 })
        #expect(events.allSatisfy { pthread_equal($0.1, loop) != 0 })
        #expect(pthread_equal(try #require(workerThread.withLock { $0 }), loop) == 0)
    }
}
