import BatonCore
import FoundationEssentials
import Synchronization

/// The conductor's writes to the fleet's database: a `SerialWorker` with a connection of its own
/// takes every item waiting, writes them in one transaction (the slot rows of their keys locked
/// first, in key order), commits, notifies the other hosts when a key slot changed, and then calls the items'
/// completions. While the database cannot be reached the items are handed back (none is lost or
/// reordered), the store says why, and the batch is tried again with a growing pause.
///
/// A transaction that ends runs of this host also starts the queued runs that may start then
/// (`FleetCoordinator.startAfterEnds`), as one machine's end item carries the next start. A
/// run's process group (`JournalEntry.processGroup`) is not a commit of its own: it rides with
/// the next write, or is written alone `rideAtMost` after it came where no other write took it
/// (no answer waits for it: a stop asked by another host reaches the run through its row's `stop`
/// and this host's conductor, which holds the attempt; the guard and a takeover find the processes
/// by cgroup and tag; but a batond started after a crash of this one takes a run back only where
/// its row names its leader, so a silent run's must not wait for its end: review s36 M1).
final class FleetWriter: Sendable {
    typealias Completion = @Sendable (Result<Void, BatonError>) -> Void

    struct Item: Sendable {
        var entries: [JournalEntry]
        var completion: Completion
        /// The start slots its ends freed, reserved when it was enqueued, for the runs its
        /// transaction starts (`FleetCoordinator.reserveEndStarts`), and whose they are.
        var starts = 0
        var starter: FleetCoordinator?
    }

    /// What the writer's thread owns: its connection and the pause before the next try.
    struct State {
        var link: PGLink
        var pause = FleetWriter.firstPause
        /// Runs that lost output chunks to a full disk: their `dropped` is counted from what is kept.
        var lossyOutput: Set<Int64> = []
        /// Entries accepted but not yet written, that ride with the next transaction (`JournalEntry.mattersOnlyToLiveProcesses`).
        var riding: [JournalEntry] = []
    }

    /// The coordinator that starts runs after ends (weak: it holds the conductor, which holds the store).
    struct Starter {
        weak var coordinator: FleetCoordinator?
    }

    static let firstPause = Duration.milliseconds(50)
    /// How long a process group waits for another write to ride with before it is written alone.
    static let rideAtMost = Duration.seconds(1)
    private let worker: SerialWorker<Item>
    /// Whether an item of nothing is due `rideAtMost` from now, to write what rides along.
    private let rideFlushArmed = Atomic<Bool>(false)
    /// Why the store cannot be used: batond has not joined yet (`waiting`), else the writer's
    /// last failure; shared by the writer's thread, the one that joins, and whoever asks.
    private let problem = Locked(Problem())

    struct Problem {
        var waiting: String?
        var writing: String?
    }
    /// The loop's: read as the conductor enqueues an item, which carries it to the writer's thread.
    private let starter: LoopOwned<Starter>
    private let reactor: Reactor

    /// `company` nil: every commit with news notifies (no feed of this host to tell in-process).
    init(conninfo: String, defaults: [String: String], host: FleetHost, company: FleetCompany?, reactor: Reactor,
         onProblem: @escaping @Sendable (String?) -> Void, onLost: @escaping @Sendable ([Int64]) -> Void) {
        self.reactor = reactor
        starter = LoopOwned(Starter(), on: reactor)
        let (problem, clock) = (problem, reactor.clock)
        worker = SerialWorker(name: "baton-fleet-wr", capacity: 50_000, maxBatch: 2_000, idleTimeout: .seconds(10),
                              state: State(link: PGLink(conninfo: conninfo, defaults: defaults))) { state, batch in
            Self.write(&batch, &state, host: host, company: company, clock: clock, starter: batch.jobs.lazy.compactMap(\.starter).first) { reason in
                let changed = problem.withLock { old in defer { old.writing = reason }; return old.writing != reason }
                if changed { onProblem(reason) }
            } onLost: { lost in onLost(lost) }
        }
    }

    func enqueue(_ entries: [JournalEntry], completion: @escaping Completion) {
        do throws(WorkerRefusal) {
            // Entries of runs already accepted: never refused for a full queue.
            let coordinator = reactor.isCurrent ? starter.access { $0.coordinator } : nil
            let starts = coordinator?.reserveEndStarts(freedBy: entries) ?? 0
            try worker.submit(Item(entries: entries, completion: completion, starts: starts, starter: starts > 0 ? coordinator : nil),
                              bounded: false)
        } catch {
            completion(.failure(.storeUnavailable("the fleet's store is closed")))
            return
        }
        if !entries.isEmpty, entries.allSatisfy(\.mattersOnlyToLiveProcesses) { flushRidingLater() }
    }

    /// Arms one item of nothing `rideAtMost` from now (none where one is due already): the writer
    /// writes what rides along with it unless a write took it meanwhile.
    private func flushRidingLater() {
        guard !rideFlushArmed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        reactor.after(Self.rideAtMost) { [weak self] in
            guard let self else { return }
            rideFlushArmed.store(false, ordering: .releasing)
            enqueue([]) { _ in }
        }
    }

    var unavailableReason: String? { problem.withLock { $0.waiting ?? $0.writing } }

    /// Why the store cannot be used yet (batond has not joined the fleet), or nil once it can.
    func waiting(_ reason: String?) { problem.withLock { $0.waiting = reason } }

    /// From now on, a transaction that ends runs of this host starts the runs `coordinator` may start then.
    func startRuns(with coordinator: FleetCoordinator) {
        let starter = starter
        let set: @Sendable () -> Void = { [weak coordinator] in starter.access { $0.coordinator = coordinator } }
        if reactor.isCurrent { set() } else { reactor.post(set) }
    }

    /// Comes round between batches and retries: alive and not stuck in a round trip.
    func ping(_ answered: @escaping @Sendable () -> Void) { worker.ping(answered) }

    /// Writes what is queued (trying again while PostgreSQL is away, for `deadline` at most),
    /// then stops; returns how many items could not be written.
    func close(deadline: Duration = .seconds(5)) -> Int {
        // An item of nothing: what rides along is written with it, if nothing else comes.
        enqueue([]) { _ in }
        return worker.close(timeout: deadline).count
    }

    private static func write(_ batch: inout SerialWorker<Item>.Batch, _ state: inout State, host: FleetHost, company: FleetCompany?, clock: any ReactorClock,
                              starter: FleetCoordinator?, problem: (String?) -> Void, onLost: ([Int64]) -> Void) {
        let entries = batch.jobs.flatMap(\.entries)
        if entries.isEmpty ? state.riding.isEmpty : entries.allSatisfy(\.mattersOnlyToLiveProcesses) {
            // Nothing waits for these: they are written with the next transaction.
            state.riding += entries
            for item in batch.jobs { item.completion(.success(())) }
            return
        }
        let reserved = batch.jobs.reduce(0) { $0 + $1.starts }
        do {
            let db = try state.link.open()
            let (lost, started) = try write(state.riding + entries, starts: reserved, lossy: state.lossyOutput, on: db, as: host,
                                            company: company, clock: clock, starter: starter)
            state.riding = []
            state.pause = firstPause
            problem(nil)
            if !lost.isEmpty { onLost(lost) }
            for item in batch.jobs { item.completion(.success(())) }
            starter?.endStartsCommitted(started, reserved: reserved)
        } catch let error as PGError where error.isConnectionProblem || error.isRetryable {
            // The items keep their start slots for the next try.
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
                Item(entries: FleetOutput.shed(item.entries, into: &state.lossyOutput), completion: item.completion, starts: item.starts,
                     starter: item.starter)
            }
            batch.retry(shed, after: state.pause)
            state.pause = min(state.pause * 2, .seconds(2))
        } catch {
            // Not the connection: the batch itself is refused (a bug or a constraint); its
            // callers hear why, and the items after it go on (without what rode along, which
            // nothing waits for: it must not refuse every batch after).
            state.link.dropIfBroken()
            state.riding = []
            starter?.releaseStarts(reserved)
            for item in batch.jobs { item.completion(.failure(.storeUnavailable("PostgreSQL refused a write: \(error)"))) }
        }
    }

    /// One transaction: `entries`, then, when it holds `starts` start slots (its ends freed
    /// them), the runs that may start (`FleetCoordinator.startAfterEnds`); returns the runs the
    /// guard refused and the runs claimed.
    private static func write(_ entries: [JournalEntry], starts: Int, lossy: Set<Int64>, on db: PGConnection, as host: FleetHost,
                              company: FleetCompany?, clock: any ReactorClock, starter: FleetCoordinator?) throws -> ([Int64], [FleetCoordinator.Claimed]) {
        let (runs, keys) = FleetJournal.keyed(entries)
        // The keys' slot rows first, in key order (`FleetJournal.lockKeys`), in the round trip of
        // the BEGIN; a hook's key gets its row first if it has none (`FleetHooks.insertKeys`);
        // then the key rows of runs that may take the slots the ends free, none waited for
        // (`FleetCoordinator.lockReady`).
        let hookKeys = FleetHooks.keys(entries)
        var opening = hookKeys.isEmpty ? [] : [FleetHooks.insertKeys(hookKeys)]
        if !runs.isEmpty || !keys.isEmpty { opening.append(FleetJournal.lockKeys(runs: runs, keys: keys)) }
        let starter = starts > 0 ? starter : nil
        if starter != nil { opening.append(FleetCoordinator.lockReady(incarnation: host.incarnation, count: starts)) }
        var started: [FleetCoordinator.Claimed] = []
        let lost = try write(entries, opening: opening, lossy: lossy, on: db, as: host, company: company, clock: clock) { opened in
            // Every key row the opening locked: the ended runs' (their follow-ups hold them
            // now), the hooks', and those `lockReady` took.
            guard let starter else { return }
            started = try starter.startAfterEnds(reserved: starts, keys: opened.flatMap { $0.rows.compactMap { $0[0] } }, on: db)
        }
        return (lost, started)
    }

    private static func write(_ entries: [JournalEntry], opening: [FleetJournal.Statement], lossy: Set<Int64>, on db: PGConnection,
                              as host: FleetHost, company: FleetCompany?, clock: any ReactorClock, beforeCommit: ([PGRows]) throws -> Void) throws -> [Int64] {
        // The pause locks of the actions whose pause this item changes or whose failures it
        // counts, before anything else: the first locks its transaction takes (`FleetPauses`).
        let pauseLocks = FleetPauses.locks(for: entries)
        // This host's feed is handed what it committed (`OwnCommit`), whoever else is told.
        // Asked once its writes are done (a mark as recent as can be: the fewer transactions to look at).
        var ask: OwnCommit.Ask?
        let (lost, closed) = try db.transaction(opening: [FleetJournal.genericPlans] + pauseLocks + opening) { results in
            let opened = Array(results.dropFirst(1 + pauseLocks.count))
            var journal = FleetJournal.Written()
            var notify = false
            for entry in entries { notify = try FleetJournal.apply(entry, on: db, as: host, &journal) || notify }
            let lost = journal.lost
            let recount = Set(entries.compactMap { entry -> Int64? in
                guard case let .outputChunks(write) = entry, lossy.contains(write.runID) else { return nil }
                return write.runID
            })
            if !recount.isEmpty { _ = try db.pipeline(FleetOutput.recount(recount)) }
            // Other hosts' followers of these runs' output read it when this commits.
            let written = Set(entries.compactMap { entry -> Int64? in
                guard case let .outputChunks(write) = entry, !write.chunks.isEmpty else { return nil }
                return write.runID
            })
            if !written.isEmpty { try db.query(FleetOutput.notify(written)) }
            try beforeCommit(opened)
            let notice: [FleetJournal.Statement] = notify && company?.notifies ?? true ? [(company?.notice ?? "NOTIFY baton", [])] : []
            ask = company?.ask(at: clock.now)
            return (lost, notice + (ask?.statements ?? []))
        }
        company?.committed(ask, closed)
        return lost
    }
}
