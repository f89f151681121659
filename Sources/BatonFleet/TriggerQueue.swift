import BatonCore
import FoundationEssentials

/// A trigger waiting for its batch, with whom to tell.
struct PendingTrigger: Sendable {
    /// The coordinator that decides it (every trigger of one queue has the same).
    let coordinator: FleetCoordinator
    var entry: TriggerBatch.Entry
    /// The start slots granted to it on the loop (0 or 1), given back when its batch settles.
    var slots: Int
    var follower: Conductor.Follower?
    var answered: @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void
}

/// The triggers of a host waiting to be decided: a `SerialWorker` with a connection of its own,
/// which takes every trigger waiting (at most `maxBatch`) and decides them in one transaction
/// (`FleetCoordinator.settle`). Triggers that come while a batch is in its transaction wait for
/// the next, which takes them all.
final class TriggerQueue: Sendable {
    /// A batch's transitions reach other hosts' feeds only once it commits, and it takes longer
    /// the more triggers it decides: 32 keeps a burst's `queued` within 50 ms of other hosts'
    /// `watch` on a busy 2-CPU machine (128 took the p99 to 52–95 ms), for about a third of the
    /// trigger rate in a burst (docs/benchmarks.md, "The trigger batch's size, again").
    static let maxBatch = 32
    private let worker: SerialWorker<PendingTrigger>

    init(conninfo: String, defaults: [String: String]) {
        worker = SerialWorker(name: "baton-fleet-trig", capacity: 10_000, maxBatch: Self.maxBatch, idleTimeout: .seconds(10),
                              state: PGLink(conninfo: conninfo, defaults: defaults)) { link, batch in
            batch.jobs.first?.coordinator.settle(&batch, &link)
        }
    }

    /// Queues a trigger; refused at once (with a connection error, as a pool's work is) when
    /// too many wait or the queue is closed: false then, its slots for the caller to give back.
    func submit(_ pending: PendingTrigger) -> Bool {
        do throws(WorkerRefusal) {
            try worker.submit(pending)
            return true
        } catch {
            let reason = error == .full ? "too much PostgreSQL work waits" : "batond is stopping"
            pending.answered(.failure(FleetCoordinator.batonError(PGError(sqlState: "08006", message: reason))))
            return false
        }
    }
}
