import BatonCore
import FoundationEssentials

/// The conductor's writes to the fleet's database: a `SerialWorker` with a connection of its own
/// takes every item waiting, writes them in one transaction (the slot rows of their keys locked
/// first, in key order), commits, notifies the other hosts when a key slot changed, and then calls the items'
/// completions. While the database cannot be reached the items are handed back (none is lost or
/// reordered), the store says why, and the batch is tried again with a growing pause.
final class FleetWriter: Sendable {
    typealias Completion = @Sendable (Result<Void, BatonError>) -> Void

    struct Item: Sendable {
        var entries: [JournalEntry]
        var completion: Completion
    }

    /// What the writer's thread owns: its connection and the pause before the next try.
    struct State {
        var link: PGLink
        var pause = FleetWriter.firstPause
        /// Runs that lost output chunks to a full disk: their `dropped` is counted from what is kept.
        var lossyOutput: Set<Int64> = []
    }

    static let firstPause = Duration.milliseconds(50)
    private let worker: SerialWorker<Item>
    private let problem = Locked<String?>(nil)

    init(conninfo: String, defaults: [String: String], host: FleetHost, onProblem: @escaping @Sendable (String?) -> Void,
         onLost: @escaping @Sendable ([Int64]) -> Void) {
        let problem = problem
        worker = SerialWorker(name: "baton-fleet-wr", capacity: 50_000, maxBatch: 2_000, idleTimeout: .seconds(10),
                              state: State(link: PGLink(conninfo: conninfo, defaults: defaults))) { state, batch in
            Self.write(&batch, &state, host: host) { reason in
                let changed = problem.withLock { old in defer { old = reason }; return old != reason }
                if changed { onProblem(reason) }
            } onLost: { lost in onLost(lost) }
        }
    }

    func enqueue(_ entries: [JournalEntry], completion: @escaping Completion) {
        do throws(WorkerRefusal) {
            // Entries of runs already accepted: never refused for a full queue.
            try worker.submit(Item(entries: entries, completion: completion), bounded: false)
        } catch {
            completion(.failure(.storeUnavailable("the fleet's store is closed")))
        }
    }

    var unavailableReason: String? { problem.withLock { $0 } }

    /// Comes round between batches and retries: alive and not stuck in a round trip.
    func ping(_ answered: @escaping @Sendable () -> Void) { worker.ping(answered) }

    /// Writes what is queued (trying again while PostgreSQL is away, for `deadline` at most),
    /// then stops; returns how many items could not be written.
    func close(deadline: Duration = .seconds(5)) -> Int {
        worker.close(timeout: deadline).count
    }

    private static func write(_ batch: inout SerialWorker<Item>.Batch, _ state: inout State, host: FleetHost,
                              problem: (String?) -> Void, onLost: ([Int64]) -> Void) {
        do {
            let db = try state.link.open()
            let lost = try write(batch.jobs.flatMap(\.entries), lossy: state.lossyOutput, on: db, as: host)
            state.pause = firstPause
            problem(nil)
            if !lost.isEmpty { onLost(lost) }
            for item in batch.jobs { item.completion(.success(())) }
        } catch let error as PGError where error.isConnectionProblem || error.isRetryable {
            state.link.dropIfBroken()
            problem("cannot write to PostgreSQL: \(error.message)")
            batch.retry(batch.jobs, after: state.pause)
            state.pause = min(state.pause * 2, .seconds(2))
        } catch let error as PGError where error.isOutOfSpace {
            // A full disk: what output waits is not kept (its runs' totals still are), so that it
            // cannot keep out the transitions that may fit; the batch is tried again without it.
            state.link.dropIfBroken()
            problem("cannot write to PostgreSQL: \(error.message)")
            let shed = batch.jobs.map { item in
                Item(entries: FleetOutput.shed(item.entries, into: &state.lossyOutput), completion: item.completion)
            }
            batch.retry(shed, after: state.pause)
            state.pause = min(state.pause * 2, .seconds(2))
        } catch {
            // Not the connection: the batch itself is refused (a bug or a constraint); its
            // callers hear why, and the items after it go on.
            state.link.dropIfBroken()
            for item in batch.jobs { item.completion(.failure(.storeUnavailable("PostgreSQL refused a write: \(error)"))) }
        }
    }

    private static func write(_ entries: [JournalEntry], lossy: Set<Int64>, on db: PGConnection, as host: FleetHost) throws -> [Int64] {
        let (runs, keys) = FleetJournal.keyed(entries)
        // The keys' slot rows first, in key order (`FleetJournal.lockKeys`), in the round trip of
        // the BEGIN; a hook's key gets its row first if it has none (`FleetHooks.insertKeys`).
        let hookKeys = FleetHooks.keys(entries)
        var opening = hookKeys.isEmpty ? [] : [FleetHooks.insertKeys(hookKeys)]
        if !runs.isEmpty || !keys.isEmpty { opening.append(FleetJournal.lockKeys(runs: runs, keys: keys)) }
        return try db.transaction(opening: opening) { _ in
            var journal = FleetJournal.Written()
            var notify = false
            for entry in entries { notify = try FleetJournal.apply(entry, on: db, as: host, &journal) || notify }
            let lost = journal.lost
            let recount = Set(entries.compactMap { entry -> Int64? in
                guard case let .outputChunks(write) = entry, lossy.contains(write.runID) else { return nil }
                return write.runID
            })
            if !recount.isEmpty { try db.pipeline(FleetOutput.recount(recount)) }
            // Other hosts' followers of these runs' output read it when this commits.
            let written = Set(entries.compactMap { entry -> Int64? in
                guard case let .outputChunks(write) = entry, !write.chunks.isEmpty else { return nil }
                return write.runID
            })
            if !written.isEmpty { try db.query(FleetOutput.notify(written)) }
            if notify { try db.execute("NOTIFY baton") }
            return lost
        }
    }
}
