import BatonEngine
import BatonRuntime
import FoundationEssentials

/// The threads that do an attempt's blocking work off the loop: the user lookup, the hook output
/// file, the pipes, the cgroup's creation and the spawn at its start; the cgroup's figures and its
/// removal at its end. A few `SerialWorker`s (each its own thread, started with its first job and
/// ended when idle); a job goes to the least loaded, so that spawns run in parallel, and its
/// completion posts back to the loop.
public final class SpawnerPool: Sendable {
    /// How many threads a daemon's pool has: one per core, 2 to 8. No pool is global: the daemon
    /// makes one and passes it to its runner, as it passes the reactor.
    public static var perCore: Int { min(max(ProcessInfo.processInfo.activeProcessorCount, 2), 8) }

    struct Work: Sendable {
        let run: @Sendable (inout SpawnerState) -> Void
    }

    private let workers: [SerialWorker<Work>]

    /// A pool of `threads` workers, named `name` (one thread: its jobs run in the order submitted),
    /// each with its own `SpawnerState` (the actions' spawn plans), which only its thread touches.
    public init(threads: Int, name: String = "baton-spawn") {
        workers = (0..<max(threads, 1)).map { _ in
            SerialWorker<Work>(name: name, capacity: 4_096, idleTimeout: .seconds(30), state: SpawnerState()) { state, batch in
                for work in batch.jobs { work.run(&state) }
            }
        }
    }

    /// Runs `work` on the least loaded thread (never on the caller's: it blocks).
    public func submit(_ work: @escaping @Sendable () -> Void) {
        submit(Work { _ in work() })
    }

    /// Runs `work` on the least loaded thread, with that thread's state.
    func submit(planned work: @escaping @Sendable (inout SpawnerState) -> Void) {
        submit(Work(run: work))
    }

    private func submit(_ work: Work) {
        let worker = workers.min { $0.load < $1.load } ?? workers[0]
        // Unbounded: refused only once closed, and this pool never closes; if it were, the work
        // still runs, on a thread of its own (with a state of its own).
        do { try worker.submit(work, bounded: false) } catch {
            SystemThread.start {
                var state = SpawnerState()
                work.run(&state)
            }
        }
    }
}
