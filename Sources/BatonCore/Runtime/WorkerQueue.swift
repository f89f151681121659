/// The queue of a `SerialWorker` as a value: which jobs it admits, what its thread does next,
/// and who must wake that thread. No clock and no thread: the worker holds it under its lock
/// and performs what it says, and the tests walk it as a table.
///
/// Invariants: jobs leave in the order they came, the held ones (a batch the handler asked to
/// retry) before any newer one; at most one batch runs at a time; after `close` nothing is
/// admitted, and the thread exits only once nothing is queued, held or running.
struct WorkerQueue<Job> {
    /// How the thread waits: for any job, or for the time of a retry (only a ping or `close` cuts that short).
    enum Sleep: Equatable { case idle, retry }

    /// What the thread does next.
    enum Next {
        /// Hand these jobs to the handler (`closing`: `close` was asked).
        case run([Job], closing: Bool)
        /// Wait until woken, or until the instant.
        case wait(until: ContinuousClock.Instant?)
        /// Nothing is left and the worker is closed: end the thread.
        case exit
    }

    let capacity: Int
    let maxBatch: Int
    private var jobs: [Job] = []
    private var head = 0
    /// The batch the handler asked to retry, and when.
    private(set) var held: [Job] = []
    private(set) var retryAt: ContinuousClock.Instant?
    /// How many jobs the handler has now.
    private(set) var running = 0
    private(set) var closing = false
    /// Whether a batch has been handed over since `close`: close cuts one retry wait short, so
    /// that the handler hears of it, not more (a retry while closing waits its time again).
    private var ranSinceClose = false
    private(set) var finished = false
    /// Set while the thread waits; cleared by whoever wakes it, so that it is woken once per wait.
    private(set) var sleep: Sleep?

    init(capacity: Int, maxBatch: Int) {
        self.capacity = max(capacity, 1)
        self.maxBatch = max(maxBatch, 1)
    }

    /// Jobs waiting to be handed over (the held ones included).
    var count: Int { jobs.count - head + held.count }

    /// Queues a job: refused once closed, and, when `bounded`, while `capacity` jobs wait.
    /// Returns whether the caller must wake the thread.
    mutating func admit(_ job: Job, bounded: Bool) throws(WorkerRefusal) -> Bool {
        if closing { throw .closed }
        if bounded && count >= capacity { throw .full }
        jobs.append(job)
        return wake(from: [.idle])
    }

    /// Asks the thread to come round (a ping); returns whether the caller must wake it.
    mutating func nudge() -> Bool { wake(from: [.idle, .retry]) }

    /// Stops admitting jobs; returns whether the caller must wake the thread.
    mutating func close() -> Bool {
        closing = true
        return wake(from: [.idle, .retry])
    }

    private mutating func wake(from states: Set<Sleep>) -> Bool {
        guard let sleep, states.contains(sleep) else { return false }
        self.sleep = nil
        return true
    }

    /// The thread's next step at `now`. A `.wait` marks it asleep until someone wakes it.
    mutating func next(at now: ContinuousClock.Instant) -> Next {
        precondition(running == 0 && sleep == nil, "one batch at a time, asked only by a thread that is awake")
        let retryDue = retryAt.map { now >= $0 } ?? true
        if !held.isEmpty && !retryDue && !(closing && !ranSinceClose) {
            sleep = .retry
            return .wait(until: retryAt)
        }
        if held.isEmpty && head == jobs.count {
            if closing {
                finished = true
                return .exit
            }
            sleep = .idle
            return .wait(until: nil)
        }
        var batch = held
        let take = min(jobs.count - head, max(maxBatch - batch.count, batch.isEmpty ? 1 : 0))
        batch += jobs[head..<head + take]
        head += take
        compact()
        held = []
        retryAt = nil
        if closing { ranSinceClose = true }
        running = batch.count
        return .run(batch, closing: closing)
    }

    /// The handler is done with its batch; `retry` (jobs of that batch, in order) waits `delay`
    /// at the head of the queue.
    mutating func ran(retrying retry: [Job], after delay: Duration, at now: ContinuousClock.Instant) {
        running = 0
        held = retry
        retryAt = retry.isEmpty ? nil : now + max(delay, .zero)
    }

    /// The thread's wait ended on its own (a timeout): returns whether a wake-up was sent
    /// meanwhile, which the thread must then take so that it does not end its next wait early.
    mutating func timedOut() -> Bool {
        if sleep != nil {
            sleep = nil
            return false
        }
        return true
    }

    /// Takes every job not handed over (held and queued, in order): `close` ran out of time.
    mutating func abandon() -> [Job] {
        let left = held + jobs[head...]
        held = []
        jobs = []
        head = 0
        retryAt = nil
        return left
    }

    /// Drops the jobs already handed over once they are most of the array.
    private mutating func compact() {
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: jobs.capacity <= 4_096)
            head = 0
        } else if head >= 1_024 && head * 2 >= jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
    }
}

/// Why a `SerialWorker` refused a job.
public enum WorkerRefusal: Error, Sendable, Equatable {
    /// `capacity` jobs wait already: the worker is behind.
    case full
    /// The worker is closed.
    case closed
}
