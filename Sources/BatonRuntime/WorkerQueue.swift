import BatonEngine
/// The queue of a `SerialWorker` as a value: which jobs it admits, what its thread does next,
/// and who must wake (or start) that thread. No clock and no thread: the worker holds it under
/// its lock and performs what it says, and the tests walk it as a table.
///
/// Invariants: jobs leave in the order they came, the held ones (a batch the handler asked to
/// retry) before any newer one; at most one thread and one batch at a time; a thread ends only
/// with nothing queued, held or running (idle for `idleTimeout`, or closed); after `close`
/// nothing is admitted.
@usableFromInline
struct WorkerQueue<Job> {
    // Inlinable, as `Locked` and `IDMap` are: each `SerialWorker<Job>` is specialized where it is
    // used (another module), and its queue with it; unspecialized, every call looked the generic
    // types' metadata up at run time (callgrind, issue 39).
    // Both are declared outside the generic type (and named here): a type nested in a generic
    // one is generic too, and each use from unspecialized code (every `SerialWorker<Job>`, called
    // across modules) looked its metadata up at run time: about a tenth of the loop's
    // instructions per run went to `submit` (callgrind, issue 39).
    @usableFromInline typealias Sleep = WorkerSleep
    @usableFromInline typealias Wake = WorkerWake

    /// What the thread does next.
    @usableFromInline enum Next {
        /// Hand these jobs to the handler (`closing`: `close` was asked).
        case run([Job], closing: Bool)
        /// Wait until woken, or until the instant.
        case wait(until: ContinuousClock.Instant?)
        /// End the thread: idle for `idleTimeout` (a job starts another), or closed and drained.
        case exit
    }

    @usableFromInline let capacity: Int
    @usableFromInline let maxBatch: Int
    /// How long an idle thread waits for a job before it ends; nil: it stays.
    @usableFromInline let idleTimeout: Duration?
    @usableFromInline var jobs: [Job] = []
    @usableFromInline var head = 0
    /// The batch the handler asked to retry, and when.
    @usableFromInline var held: [Job] = []
    @usableFromInline var retryAt: ContinuousClock.Instant?
    /// How many jobs the handler has now.
    @usableFromInline var running = 0
    @usableFromInline var closing = false
    /// Whether a batch has been handed over since `close`: close cuts one retry wait short, so
    /// that the handler hears of it, not more (a retry while closing waits its time again).
    @usableFromInline var ranSinceClose = false
    /// Closed, with nothing left and no thread.
    @usableFromInline var finished = false
    @usableFromInline var hasThread = false
    /// Since when the thread has had nothing to do.
    @usableFromInline var idleSince: ContinuousClock.Instant?
    /// Set while the thread waits; cleared by whoever wakes it, so that it is woken once per wait.
    @usableFromInline var sleep: Sleep?

    @inlinable init(capacity: Int, maxBatch: Int, idleTimeout: Duration? = nil) {
        self.capacity = max(capacity, 1)
        self.maxBatch = max(maxBatch, 1)
        self.idleTimeout = idleTimeout
    }

    /// Jobs waiting to be handed over (the held ones included).
    @inlinable var count: Int { jobs.count - head + held.count }

    /// Queues a job: refused once closed, and, when `bounded`, while `capacity` jobs wait.
    @inlinable mutating func admit(_ job: Job, bounded: Bool) throws(WorkerRefusal) -> Wake {
        if closing { throw .closed }
        if bounded && count >= capacity { throw .full }
        jobs.append(job)
        if !hasThread {
            hasThread = true
            return .start
        }
        return wake(retrying: false)
    }

    /// Asks the thread to come round (a ping). Nil: there is no thread to ask (nothing is
    /// queued, nothing can be stuck), so the caller answers at once.
    @inlinable mutating func nudge() -> Wake? {
        hasThread ? wake(retrying: true) : nil
    }

    /// Stops admitting jobs; the thread ends once it has drained them (at once without one).
    @inlinable mutating func close() -> Wake {
        closing = true
        if !hasThread { finished = true }
        return wake(retrying: true)
    }

    /// Wakes the thread where it sleeps idle, or (`retrying`) also where it waits for a retry's time.
    /// (Not a `Set` of states: one was built and hashed at every job admitted.)
    @inlinable mutating func wake(retrying: Bool) -> Wake {
        guard let sleep, retrying || sleep.isIdle else { return .nothing }
        self.sleep = nil
        return .signal
    }

    /// The thread's next step at `now`. A `.wait` marks it asleep until someone wakes it.
    @inlinable mutating func next(at now: ContinuousClock.Instant) -> Next {
        precondition(running == 0 && sleep == nil && hasThread, "one batch at a time, asked only by a thread that is awake")
        let retryDue = retryAt.map { now >= $0 } ?? true
        if !held.isEmpty && !retryDue && !(closing && !ranSinceClose) {
            sleep = .retry
            return .wait(until: retryAt)
        }
        if held.isEmpty && head == jobs.count { return nothingToDo(at: now) }
        var batch = held
        let take = min(jobs.count - head, max(maxBatch - batch.count, batch.isEmpty ? 1 : 0))
        batch += jobs[head..<head + take]
        head += take
        compact()
        held = []
        retryAt = nil
        idleSince = nil
        if closing { ranSinceClose = true }
        running = batch.count
        return .run(batch, closing: closing)
    }

    @inlinable mutating func nothingToDo(at now: ContinuousClock.Instant) -> Next {
        if closing {
            finished = true
            hasThread = false
            return .exit
        }
        guard let idleTimeout else {
            sleep = .idle
            return .wait(until: nil)
        }
        let since = idleSince ?? now
        idleSince = since
        if now - since >= idleTimeout {
            idleSince = nil
            hasThread = false
            return .exit
        }
        sleep = .idle
        return .wait(until: since + idleTimeout)
    }

    /// The handler is done with its batch; `retry` (jobs of that batch, in order) waits `delay`
    /// at the head of the queue.
    @inlinable mutating func ran(retrying retry: [Job], after delay: Duration, at now: ContinuousClock.Instant) {
        running = 0
        held = retry
        retryAt = retry.isEmpty ? nil : now + max(delay, .zero)
    }

    /// The thread's wait ended on its own (a timeout): returns whether a wake-up was sent
    /// meanwhile, which the thread must then take so that it does not end its next wait early.
    @inlinable mutating func timedOut() -> Bool {
        if sleep != nil {
            sleep = nil
            return false
        }
        return true
    }

    /// Takes every job not handed over (held and queued, in order): `close` ran out of time.
    @inlinable mutating func abandon() -> [Job] {
        let left = held + jobs[head...]
        held = []
        jobs = []
        head = 0
        retryAt = nil
        return left
    }

    /// Drops the jobs already handed over once they are most of the array.
    @inlinable mutating func compact() {
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: jobs.capacity <= 4_096)
            head = 0
        } else if head >= 1_024 && head * 2 >= jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
    }
}

/// How a worker's thread waits: for any job, or for the time of a retry (only a ping or `close`
/// cuts that short).
@usableFromInline enum WorkerSleep: Equatable, Sendable {
    case idle, retry
    // Not `==`: a synthesized operator is internal, out of inlinable code's reach.
    @inlinable var isIdle: Bool { if case .idle = self { true } else { false } }
}

/// What the one who changed a worker's queue must do for its thread.
@usableFromInline enum WorkerWake: Equatable, Sendable {
    case nothing
    /// Signal the sleeping thread.
    case signal
    /// There is no thread: start one.
    case start
}

/// Why a `SerialWorker` refused a job.
public enum WorkerRefusal: Error, Sendable, Equatable {
    /// `capacity` jobs wait already: the worker is behind.
    case full
    /// The worker is closed.
    case closed
}
