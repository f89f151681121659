import BatonCore
import CSQLite
import FoundationEssentials

/// The writer: takes the items waiting, writes them in one transaction, calls completions;
/// hands back what cannot be written for a retry, in order.
extension Store {
    /// What the writer's thread owns.
    struct WriterState {
        let connection: Connection
        /// The highest run id committed (ids are never given out twice, even if the file is lost).
        var highestRunID: Int64
        /// Set once the file is gone: nothing more is written to it.
        var lost = false
        /// Runs whose output lost chunks to a full disk: their `dropped` is counted from what is kept.
        var lossyOutput: Set<Int64> = []
        /// Whether the connection commits without an `fdatasync` now (`synchronous = NORMAL`) where
        /// the store's is FULL: for a batch of entries that matter only to live processes (`relaxes`).
        var relaxed = false
    }

    /// What the writer reads of the store (the store itself is not needed on its thread).
    struct Context: Sendable {
        var path: String
        var options: Options
        var identity: FileIdentity?
        var status: Locked<Status>
    }

    /// One batch: written in one transaction; on a busy or full database, every item that
    /// may wait is handed back (creations are refused at once), unless batond is stopping
    /// and the disk stays full.
    static func write(_ batch: inout SerialWorker<Item>.Batch, _ state: inout WriterState, _ context: Context) {
        // A database file deleted or replaced under batond: write nothing more to the old one.
        if !state.lost, let problem = context.identity?.problem(at: context.path) {
            state.lost = true
            lose(problem, state, context)
        }
        if state.lost {
            strand(batch.jobs, context)
            return
        }
        do {
            let began = ContinuousClock.now
            let relax = context.options.synchronous == .full && relaxes(batch.jobs)
            if relax != state.relaxed {
                try state.connection.cached(relax ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL") { try $0.run([]) }
                state.relaxed = relax
            }
            let results = try write(batch.jobs, lossy: state.lossyOutput, on: state.connection)
            // Synced: waited for an fdatasync (a FULL store's commit, but a relaxed one; NORMAL and OFF never do).
            context.options.onCommit?((ContinuousClock.now - began).secondsValue, batch.jobs.count, context.options.synchronous == .full && !relax)
            context.options.afterCommit?(state.connection)
            for item in batch.jobs { for case let .created(run, _) in item.entries { state.highestRunID = max(state.highestRunID, run.id) } }
            let recovered = context.status.withLock { status in
                defer {
                    status.failure = nil
                    status.committedItems += batch.jobs.count
                    status.committedTransactions += 1
                    if relax { status.unsyncedTransactions += 1 }
                }
                return status.failure != nil
            }
            if recovered { context.options.onProblem?(nil) }
            for (item, result) in zip(batch.jobs, results) { item.completion(result) }
        } catch {
            let message = describe(error)
            let busy = (error as? DatabaseError)?.isBusy ?? false
            if busy { context.status.withLock { $0.busyRetries += 1 } } else { setFailure(message, context) }
            // Creations are refused at once; everything else waits for the next try, in order.
            var held = batch.jobs.filter { item in
                if item.refusedWhileFailing && !busy { item.completion(.failure(.storeUnavailable(message))); return false }
                return true
            }
            // A full disk: what output waits is not kept (its runs' totals still are), so that it
            // cannot keep out the transitions that may fit, nor wait in memory for space.
            if (error as? DatabaseError)?.isFull == true {
                held = held.map { OutputShedding.shed($0, into: &state.lossyOutput) }
            }
            if batch.isClosing && !busy {
                // Shutting down with a disk that stays full: give up on what cannot be written,
                // and keep it for `closeReporting` to log.
                context.status.withLock { $0.givenUp += held.map(\.entries) }
                for item in held { item.completion(.failure(.storeUnavailable(message))) }
                held = []
            }
            batch.retry(held, after: batch.isClosing ? .zero : busy ? .milliseconds(10) : context.options.retryDelay)
        }
    }

    /// Whether a batch may commit without an `fdatasync`: every entry of every item matters only to
    /// live processes (`JournalEntry.mattersOnlyToLiveProcesses`: an attempt's process group), and no
    /// item has other work or is a barrier (an empty item, which someone waits on). In WAL mode such a
    /// commit is in the page cache (it outlives a crash of batond, not of the machine, whose crash
    /// ends the processes it names) until the next synced commit flushes the WAL, with it, in order.
    static func relaxes(_ items: [Item]) -> Bool {
        !items.isEmpty && items.allSatisfy { item in
            item.work == nil && !item.entries.isEmpty && item.entries.allSatisfy(\.mattersOnlyToLiveProcesses)
        }
    }

    static func setFailure(_ message: String?, _ context: Context) {
        let changed = context.status.withLock { status in
            defer { status.failure = message }
            return status.failure != message
        }
        if changed { context.options.onProblem?(message) }
    }

    /// The database file is gone or replaced: from now on triggers are refused, and a new file
    /// with the id counter is left where the old one was, so that a restart never gives out an
    /// id twice.
    private static func lose(_ problem: String, _ state: WriterState, _ context: Context) {
        let message = "\(problem); new triggers are refused until batond restarts"
        context.status.withLock { status in
            status.failure = message
            status.lost = problem
        }
        context.options.onProblem?(message)
        if context.identity?.isMissing(context.path) == true { keepIDCounter(state.highestRunID, context) }
    }

    /// Fails every item at once and keeps the entries of those that may not be refused (a run's
    /// end) for `closeReporting` to log: they can never be written, and an end left waiting kept
    /// its run in flight, so that a SIGTERM's drain waited for it forever (issue 37, item 7).
    private static func strand(_ items: [Item], _ context: Context) {
        let message = context.status.withLock { $0.failure } ?? "the history file is gone"
        let kept = items.filter { !$0.refusedWhileFailing }
        context.status.withLock { status in
            status.stranded += kept.count
            status.strandedTransitions += kept.flatMap(\.entries).compactMap(\.phaseChange)
        }
        for item in items { item.completion(.failure(.storeUnavailable(message))) }
    }

    /// A new history at the path that only knows the highest id given out.
    private static func keepIDCounter(_ highestRunID: Int64, _ context: Context) {
        guard let connection = try? Connection(path: context.path) else { return }
        try? configure(connection, options: context.options)
        _ = try? Migrator.migrate(connection)
        _ = try? SearchIndex.apply(wanted: context.options.searchIndex, on: connection)
        try? connection.execute("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('runs', \(highestRunID))")
    }

    /// Writes a batch in one transaction. An item that is wrong in itself (an illegal phase change)
    /// fails alone and is rolled back; a busy or full database fails the whole batch. Items are
    /// written without savepoints first (a bad item is a bug, so this is the path taken); only
    /// when one fails is the batch written again with a savepoint around each item.
    static func write(_ batch: [Item], lossy: Set<Int64>, on connection: Connection) throws -> [Result<Void, BatonError>] {
        do {
            try connection.transaction(immediate: true) {
                // A run created in this group is written once, at the group's end (`RunRows`).
                var rows = RunRows(for: batch.lazy.flatMap(\.entries))
                for item in batch { try writeItem(item, &rows, on: connection) }
                try rows.flush(on: connection)
                try OutputShedding.recount(batch, lossy: lossy, on: connection)
            }
            return Array(repeating: .success(()), count: batch.count)
        } catch let error as DatabaseError where error.isBusy || error.isFull || error.primaryCode == SQLITE_IOERR {
            throw error
        } catch {
            return try writeIsolated(batch, lossy: lossy, on: connection)
        }
    }

    private static func writeIsolated(_ batch: [Item], lossy: Set<Int64>, on connection: Connection) throws -> [Result<Void, BatonError>] {
        var results: [Result<Void, BatonError>] = []
        results.reserveCapacity(batch.count)
        try connection.transaction(immediate: true) {
            for item in batch {
                try connection.cached("SAVEPOINT item") { try $0.run([]) }
                do {
                    // Each item's runs are written within its savepoint: a failure is its own.
                    var rows = RunRows(for: item.entries)
                    try writeItem(item, &rows, on: connection)
                    try rows.flush(on: connection)
                    try connection.cached("RELEASE item") { try $0.run([]) }
                    results.append(.success(()))
                } catch let error as DatabaseError where error.isBusy || error.isFull || error.primaryCode == SQLITE_IOERR {
                    throw error
                } catch {
                    try connection.execute("ROLLBACK TO item; RELEASE item")
                    results.append(.failure(.internalError("history write refused: \(Self.describe(error))")))
                }
            }
            try OutputShedding.recount(batch, lossy: lossy, on: connection)
        }
        return results
    }

    private static func writeItem(_ item: Item, _ rows: inout RunRows, on connection: Connection) throws {
        for entry in item.entries { try rows.write(entry, on: connection) }
        guard let work = item.work else { return }
        // Other work (pruning, a `perform`) sees every row of the group so far.
        try rows.flush(on: connection)
        try work(connection)
    }

    /// An error for people: SQLite's message without the SQL, or the error's own description.
    static func describe(_ error: any Error) -> String {
        (error as? DatabaseError)?.message ?? "\(error)"
    }
}
