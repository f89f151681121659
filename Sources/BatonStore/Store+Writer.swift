import BatonCore
import CSQLite
import Foundation

/// The writer thread: takes what is pending, writes it in one transaction, calls completions;
/// holds and retries what cannot be written, in order.
extension Store {
    func writerLoop() {
        guard let connection = writer else { return }
        var held: [Item] = []
        while true {
            condition.lock()
            while pending.isEmpty && held.isEmpty && pings.isEmpty && !closing { condition.wait() }
            let answered = pings
            pings = []
            if !answered.isEmpty {
                condition.unlock()
                for ping in answered { ping() }
                condition.lock()
            }
            if pending.isEmpty && held.isEmpty && !closing {
                condition.unlock()
                continue
            }
            if pending.isEmpty && held.isEmpty {
                writerDone = true
                let last = pings
                pings = []
                condition.broadcast()
                condition.unlock()
                for ping in last { ping() }
                break
            }
            let take = min(pending.count, max(options.maxBatch - held.count, 1))
            let batch = held + pending.prefix(take)
            pending.removeFirst(take)
            condition.unlock()
            // A database file deleted or replaced under batond: write nothing more to the old one.
            if let problem = identity?.problem(at: path) {
                strand(batch, problem)
                return
            }

            do {
                let began = ContinuousClock.now
                let results = try write(batch, on: connection)
                options.onCommit?((ContinuousClock.now - began).secondsValue, batch.count)
                held = []
                for item in batch { for case let .created(run, _) in item.entries { highestRunID = max(highestRunID, run.id) } }
                condition.lock()
                if failure != nil { options.onProblem?(nil) }
                failure = nil
                committedItems += batch.count
                committedTransactions += 1
                condition.unlock()
                for (item, result) in zip(batch, results) { item.completion(result) }
            } catch {
                let message = (error as? DatabaseError)?.message ?? "\(error)"
                let busy = (error as? DatabaseError)?.isBusy ?? false
                if !busy { setFailure(message) }
                // Creations are refused at once; everything else waits for the next try, in order.
                held = batch.filter { item in
                    if item.refusedWhileFailing && !busy { item.completion(.failure(.storeUnavailable(message))); return false }
                    return true
                }
                condition.lock()
                let stop = closing
                if !stop { _ = condition.wait(until: Date().addingTimeInterval(busy ? 0.01 : options.retryDelay.secondsValue)) }
                condition.unlock()
                if stop && !busy {
                    // Shutting down with a disk that stays full: give up on what cannot be written.
                    for item in held { item.completion(.failure(.storeUnavailable(message))) }
                    held = []
                }
            }
        }
        writer = nil
    }

    func setFailure(_ message: String?) {
        condition.lock()
        let changed = failure != message
        failure = message
        condition.unlock()
        if changed { options.onProblem?(message) }
    }

    /// The database file is gone or replaced: refuse what answers a trigger, keep the rest in
    /// memory (nothing more is written), leave a new file with the id counter where the old one
    /// was so that a restart never gives out an id twice, and wait for close.
    private func strand(_ batch: [Item], _ problem: String) {
        let message = "\(problem); new triggers are refused until batond restarts"
        condition.lock()
        lost = true
        failure = message
        condition.unlock()
        options.onProblem?(message)
        for item in batch where item.refusedWhileFailing { item.completion(.failure(.storeUnavailable(message))) }
        var stranded = batch.filter { !$0.refusedWhileFailing }.count
        if identity?.isMissing(path) == true { keepIDCounter() }
        condition.lock()
        while !closing {
            stranded += pending.count
            pending = []
            condition.wait()
        }
        unwritten = stranded + pending.count
        writerDone = true
        condition.broadcast()
        condition.unlock()
        writer = nil
    }

    /// A new history at the path that only knows the highest id given out.
    private func keepIDCounter() {
        guard let connection = try? Connection(path: path) else { return }
        try? Self.configure(connection, options: options)
        _ = try? Migrator.migrate(connection)
        try? connection.execute("INSERT OR REPLACE INTO sqlite_sequence (name, seq) VALUES ('runs', \(highestRunID))")
    }

    /// Writes a batch in one transaction. An item that is wrong in itself (an illegal phase change)
    /// fails alone and is rolled back; a busy or full database fails the whole batch. Items are
    /// written without savepoints first (a bad item is a bug, so this is the path taken); only
    /// when one fails is the batch written again with a savepoint around each item.
    private func write(_ batch: [Item], on connection: Connection) throws -> [Result<Void, BatonError>] {
        do {
            try connection.transaction(immediate: true) {
                for item in batch { try writeItem(item, on: connection) }
            }
            return Array(repeating: .success(()), count: batch.count)
        } catch let error as DatabaseError where error.isBusy || error.isFull || error.primaryCode == SQLITE_IOERR {
            throw error
        } catch {
            return try writeIsolated(batch, on: connection)
        }
    }

    private func writeIsolated(_ batch: [Item], on connection: Connection) throws -> [Result<Void, BatonError>] {
        var results: [Result<Void, BatonError>] = []
        results.reserveCapacity(batch.count)
        try connection.transaction(immediate: true) {
            for item in batch {
                try connection.cached("SAVEPOINT item") { try $0.run([]) }
                do {
                    try writeItem(item, on: connection)
                    try connection.cached("RELEASE item") { try $0.run([]) }
                    results.append(.success(()))
                } catch let error as DatabaseError where error.isBusy || error.isFull || error.primaryCode == SQLITE_IOERR {
                    throw error
                } catch {
                    try connection.execute("ROLLBACK TO item; RELEASE item")
                    results.append(.failure(.internalError("history write refused: \(Self.describe(error))")))
                }
            }
        }
        return results
    }

    private func writeItem(_ item: Item, on connection: Connection) throws {
        for entry in item.entries { try JournalWriter.write(entry, on: connection) }
        try item.work?(connection)
    }

    /// An error for people: SQLite's message without the SQL, or the error's own description.
    static func describe(_ error: any Error) -> String {
        (error as? DatabaseError)?.message ?? "\(error)"
    }
}
