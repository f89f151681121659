import Synchronization

/// Drives the requests that wait on something asynchronous (history reads, through the store's
/// reader worker or the fleet's pool; the admin hooks; a long param match) from one place, and
/// hands each result to the event loop as a completion. `HistoryReader` is async (the SQLite
/// store, the fleet and the tests' fakes each implement it so): instead of a fresh unstructured
/// `Task` per request, one task owns a task group, each request a child of it, so that every
/// read in flight is counted, and they all end with the driver.
public final class ReadDriver: Sendable {
    public typealias Job = @Sendable () async -> Void
    private let jobs: AsyncStream<Job>.Continuation
    private let reactor: Reactor
    private let running = Atomic<Int>(0)

    public init(reactor: Reactor) {
        self.reactor = reactor
        let (stream, jobs) = AsyncStream.makeStream(of: Job.self)
        self.jobs = jobs
        // The one task: it holds the stream, not the driver, and ends when the driver goes.
        Task.detached {
            await withDiscardingTaskGroup { group in
                for await job in stream { group.addTask { await job() } }
            }
        }
    }

    deinit { jobs.finish() }

    /// Runs `work`, then calls `then` with its result on the loop.
    public func read<T: Sendable>(_ work: @escaping @Sendable () async throws(BatonError) -> T,
                                  then: @escaping @Sendable (Result<T, BatonError>) -> Void) {
        let reactor = reactor
        run {
            let result: Result<T, BatonError>
            do throws(BatonError) { result = .success(try await work()) } catch { result = .failure(error) }
            reactor.post { then(result) }
        }
    }

    /// Runs `work` (which answers for itself), counted with the others.
    public func run(_ work: @escaping Job) {
        running.add(1, ordering: .relaxed)
        jobs.yield { [self] in
            await work()
            running.subtract(1, ordering: .relaxed)
        }
    }

    /// Requests waiting on their reads now.
    public var inFlight: Int { running.load(ordering: .relaxed) }
}
