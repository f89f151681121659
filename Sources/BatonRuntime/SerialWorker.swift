import BatonEngine
import CBatonSystem
import Dispatch
import FoundationEssentials
import Synchronization

/// A thread of its own for blocking work (SQLite commits, libpq round trips): jobs wait in a
/// bounded queue and go to one handler in batches, in the order they were submitted, one batch
/// at a time, with the state the worker owns (a connection), which no other thread touches.
///
/// Completions: a job carries its caller's callback, and the handler calls it on the worker's
/// thread once the job is done. A callback must not block, and must never wait for its own
/// worker; a caller whose state lives on a loop posts the event there from the callback
/// (`reactor.post { … }`, or the conductor's inbox).
///
/// A handler may hand part of its batch back (`Batch.retry`): those jobs stay at the head of
/// the queue, ahead of every newer one, and come back after the delay (a busy or full
/// database, a lost connection). `close` stops admitting jobs and lets the thread finish what
/// is queued; a handler learns of it from `Batch.isClosing` (and may then give up on a retry).
///
/// The thread starts with the first job; with an `idleTimeout` it ends after that long with
/// nothing to do, and the next job starts another, which takes the state over.
public final class SerialWorker<Job: Sendable>: Sendable {
    /// The jobs a handler is given, and what it says back.
    public struct Batch: Sendable {
        /// The jobs, oldest first: those held for a retry, then the newer ones.
        public let jobs: [Job]
        /// Whether `close` was asked: the last jobs are being drained.
        public let isClosing: Bool
        @usableFromInline var retried: [Job] = []
        @usableFromInline var delay: Duration = .zero

        @inlinable init(jobs: [Job], isClosing: Bool) {
            self.jobs = jobs
            self.isClosing = isClosing
        }

        /// Keeps `jobs` (some of this batch, in order) at the head of the queue and hands them
        /// over again after `delay`, with newer jobs behind them.
        public mutating func retry(_ jobs: [Job], after delay: Duration) {
            retried = jobs
            self.delay = delay
        }
    }

    /// What `close` left undone when its time ran out.
    public struct Unfinished {
        /// The jobs never handed to the handler (taken out: they will not run).
        public var abandoned: [Job]
        /// How many jobs the handler still had.
        public var running: Int
        /// Both together.
        public var count: Int { abandoned.count + running }
    }

    @usableFromInline struct Shared {
        @usableFromInline var queue: WorkerQueue<Job>
        @usableFromInline var pings: [@Sendable () -> Void] = []
        @inlinable init(queue: WorkerQueue<Job>) { self.queue = queue }
    }

    /// Guards the queue and the pings; never held while the handler or a callback runs.
    // Inlinable from here on (the queue and `Locked` too): each use is specialized for its `Job` in
    // the module that names it; unspecialized, every call looked generic metadata up (issue 39).
    @usableFromInline let shared: Locked<Shared>
    /// Signalled once per wait of the thread, by whoever clears `queue.sleep`.
    @usableFromInline let wake = DispatchSemaphore(value: 0)
    /// Signalled when the thread has ended closed (and again by each `close` that saw it).
    @usableFromInline let exited = DispatchSemaphore(value: 0)
    /// Signalled each time a thread ends idle (the tests wait on it).
    @usableFromInline let endedIdle = DispatchSemaphore(value: 0)
    /// Starts a thread that takes the state and runs the queue.
    @usableFromInline let startThread: @Sendable (SerialWorker) -> Void
    /// Frees the state (the worker is closed and has no thread).
    @usableFromInline let freeState: @Sendable () -> Void

    /// A worker whose thread, named `name` (15 characters show in `top -H`), owns `state` from
    /// now on. At most `capacity` jobs wait for bounded submits; the handler gets at most
    /// `maxBatch` jobs at once.
    @inlinable public init<State>(name: String, capacity: Int, maxBatch: Int = 1, idleTimeout: Duration? = nil, state: sending State,
                       handler: @escaping @Sendable (inout State, inout Batch) -> Void) {
        shared = Locked(Shared(queue: WorkerQueue(capacity: capacity, maxBatch: maxBatch, idleTimeout: idleTimeout)))
        // The state, sent here once: each thread the worker starts runs its batches holding this
        // mutex. The queue never lets two of the worker's threads run at once (a thread that ends
        // decides so under the queue's lock, after its last batch; the next starts after that), so
        // the mutex is never waited for (a thread that finds it held stops the process): it is how the
        // compiler knows that one thread at a time owns the state, which a box that threads hand to
        // each other (`@unchecked`) only claimed.
        // A closed worker frees it (closes its connection) before `close` returns: the thread that
        // ends closed does, or `close` itself when there is no thread.
        let owned = Owned(state)
        startThread = { worker in
            SystemThread.start {
                baton_set_thread_name(name)
                worker.run(name, owned, handler)
            }
        }
        freeState = { owned.free() }
    }

    /// Queues a job. A bounded submit is refused while `capacity` jobs wait (backpressure: the
    /// caller says no to new work); an unbounded one only once the worker is closed (work
    /// already accepted elsewhere, which must not be lost). Never blocks.
    @inlinable public func submit(_ job: Job, bounded: Bool = true) throws(WorkerRefusal) {
        let admitted = shared.withLock { shared -> Result<WorkerWake, WorkerRefusal> in
            do throws(WorkerRefusal) { return .success(try shared.queue.admit(job, bounded: bounded)) } catch { return .failure(error) }
        }
        perform(try admitted.get())
    }

    /// Calls `answered` on the worker's thread when it next comes round (between batches, or
    /// during a retry's wait): it is alive and not stuck in a call. At once when it has no thread.
    @inlinable public func ping(_ answered: @escaping @Sendable () -> Void) {
        let wake = shared.withLock { shared -> WorkerQueue<Job>.Wake? in
            guard let wake = shared.queue.nudge() else { return nil }
            shared.pings.append(answered)
            return wake
        }
        guard let wake else { return answered() }
        perform(wake)
    }

    /// How many jobs wait (held for a retry included).
    @inlinable public var queued: Int { shared.withLock { $0.queue.count } }

    /// Jobs waiting (held for a retry included) or in the handler.
    @inlinable public var load: Int { shared.withLock { $0.queue.count + $0.queue.running } }

    /// Stops admitting jobs, lets the thread finish what is queued and waits for it to end, at
    /// most `timeout`. Returns what was left undone (nothing, when the thread ended in time).
    /// Never call it from the worker's own thread (a job or a callback).
    @discardableResult
    public func close(timeout: Duration = .seconds(10)) -> Unfinished {
        let (wake, finished) = shared.withLock { shared in (shared.queue.close(), shared.queue.finished) }
        perform(wake)
        if finished { freeState() }
        if finished || exited.wait(timeout: .now() + timeout.secondsValue) == .success {
            exited.signal()
            return Unfinished(abandoned: [], running: 0)
        }
        return shared.withLock { shared in Unfinished(abandoned: shared.queue.abandon(), running: shared.queue.running) }
    }

    @inlinable func perform(_ wake: WorkerQueue<Job>.Wake) {
        switch wake {
        case .nothing: break
        case .signal: self.wake.signal()
        case .start: startThread(self)
        }
    }

    /// The thread: takes the next step, answers the pings, and runs, waits or ends.
    @inlinable func run<State>(_ name: String, _ owned: Owned<State>, _ handler: @Sendable (inout State, inout Batch) -> Void) {
        while true {
            let (next, pings, closed) = shared.withLock { shared -> (WorkerQueue<Job>.Next, [@Sendable () -> Void], Bool) in
                defer { shared.pings = [] }
                return (shared.queue.next(at: .now), shared.pings, shared.queue.finished)
            }
            assertNoLockHeld("a worker's batch")
            for ping in pings { ping() }
            switch next {
            case let .run(jobs, closing):
                var batch = Batch(jobs: jobs, isClosing: closing)
                owned.withState(name, &batch, handler)
                shared.withLock { $0.queue.ran(retrying: batch.retried, after: batch.delay, at: .now) }
            case let .wait(until):
                guard let until else {
                    wake.wait()
                    continue
                }
                if wake.wait(timeout: .now() + max(until - .now, .zero).secondsValue) == .timedOut,
                   shared.withLock({ $0.queue.timedOut() }) {
                    wake.wait()
                }
            case .exit:
                if closed { owned.free() }
                (closed ? exited : endedIdle).signal()
                return
            }
        }
    }
}

/// A worker's state, taken by the thread that runs a batch (one at a time: see `SerialWorker.init`);
/// nil once the worker is closed and has freed it.
@usableFromInline final class Owned<State>: Sendable {
    @usableFromInline let state: Mutex<State?>
    @inlinable init(_ state: sending State) { self.state = Mutex(state) } // ownership proof: the queue gives a batch to one thread at a time

    /// Runs `body` on the state. The queue never lets two threads run a batch at once, so the lock is
    /// never held here: if it is, the queue is broken (batches would commit out of order), and the
    /// process stops, naming the worker.
    @inlinable func withState<Batch: Sendable>(_ name: String, _ batch: inout Batch, _ body: @Sendable (inout State, inout Batch) -> Void) {
        let ran = state.withLockIfAvailable { state -> Bool in
            guard state != nil else { return false }
            body(&state!, &batch)
            return true
        }
        guard let ran else { preconditionFailure("\(name): two threads ran a batch at once") }
        precondition(ran, "\(name): a batch after the state was freed")
    }

    /// Frees the state: taken out under the lock, freed (a connection closed) outside it.
    @inlinable func free() {
        let last = state.withLock { $0.take() }
        _ = consume last
    }
}
