import BatonCore
import CSQLite
import Foundation

/// Baton's history in SQLite: one writer thread that commits the journal in groups, and one
/// reader queue for queries, so that reads never wait for writes and no SQLite call blocks the
/// cooperative thread pool.
///
/// Write failures never lose a transition: when the disk is full or the database locked, the
/// writer keeps the entries in memory and retries them, in order, before anything newer; only
/// the creation of new runs is refused (`store_unavailable`) while that lasts.
public final class Store: RunStore, @unchecked Sendable {
    /// How hard commits go to disk.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// fsync the WAL at every commit: nothing committed is lost on power failure.
        case full = "FULL"
        /// fsync at checkpoints only: a power failure may lose the last commits, a crash of batond may not.
        case normal = "NORMAL"
        /// Never fsync (benchmarks and tests only).
        case off = "OFF"
    }

    /// How the store is opened.
    public struct Options: Sendable {
        public var synchronous: Synchronous
        public var busyTimeout: Duration
        /// The most journal items (trigger answers, transitions) committed in one transaction.
        public var maxBatch: Int
        /// How long to wait before retrying after a write failed for lack of space or an I/O error.
        public var retryDelay: Duration
        /// Told why writes fail when they start failing, and nil when they work again (for the log).
        public var onProblem: (@Sendable (String?) -> Void)?
        /// Told of each committed transaction: how long it took and how many items it carried.
        public var onCommit: (@Sendable (_ seconds: Double, _ items: Int) -> Void)?

        public init(synchronous: Synchronous = .full, busyTimeout: Duration = .seconds(5), maxBatch: Int = 2_000,
                    retryDelay: Duration = .milliseconds(500), onProblem: (@Sendable (String?) -> Void)? = nil) {
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
            self.maxBatch = maxBatch
            self.retryDelay = retryDelay
            self.onProblem = onProblem
        }
    }

    struct Item {
        var entries: [JournalEntry]
        var completion: @Sendable (Result<Void, BatonError>) -> Void
        /// Items that answer a trigger (creations, trigger records) are refused while the store cannot
        /// write; the others are kept.
        var refusedWhileFailing: Bool
        /// Other writing work (pruning), run in the item's savepoint after its entries.
        var work: ((Connection) throws -> Void)?
    }

    public let path: String
    let options: Options
    /// Guards `pending`, `closing`, `failure` and `written`, and wakes the writer.
    let condition = NSCondition()
    var pending: [Item] = []
    var closing = false
    var writerDone = false
    /// Why the last write failed, while writes keep failing.
    var failure: String?
    /// Liveness checks waiting for the writer thread to come round its loop.
    var pings: [@Sendable () -> Void] = []
    /// Journal items and transactions committed so far (the average group size is their ratio).
    var committedItems = 0
    var committedTransactions = 0
    var writer: Connection?
    private let readQueue = DispatchQueue(label: "baton.store.reader")
    /// The database file as opened: a file at the path with another identity, or none, means it
    /// was deleted or replaced under batond.
    let identity: FileIdentity?
    /// The highest run id committed (ids are never given out twice, even if the file is lost).
    var highestRunID: Int64 = 0
    /// Set (under `condition`) once the file is gone: nothing more is written to it.
    var lost = false
    /// Journal items that could not be written before close.
    var unwritten = 0
    /// Used only on `readQueue`.
    private let reader: Connection

    /// Opens (creating if needed) and migrates the history at `path`, then starts the writer.
    public init(path: String, options: Options = Options()) throws(StoreError) {
        self.path = path
        self.options = options
        let writer: Connection
        do {
            writer = try Self.open(path, options)
            // Refuse a newer or foreign database before anything (even the journal mode) is written.
            let found = try Migrator.version(of: writer)
            if found > Migrator.latestVersion {
                throw StoreError.schemaTooNew(path: path, found: found, supported: Migrator.latestVersion)
            }
            try Self.refuseReadOnly(writer, path: path)
            try Self.configure(writer, options: options)
            try Migrator.migrate(writer)
            reader = try Self.open(path, options)
            try Self.configure(reader, options: options)
            try reader.execute("PRAGMA query_only = 1")
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.classify(error, path: path)
        } catch {
            throw .database(DatabaseError(code: SQLITE_ERROR, message: "\(error)"))
        }
        self.writer = writer
        identity = FileIdentity(path: path)
        highestRunID = (try? History(connection: reader).recoverableState().nextRunID - 1) ?? 0
        let thread = Thread { [self] in writerLoop() }
        thread.name = "baton-store-writer"
        thread.start()
    }

    /// Opens a connection that waits up to the busy timeout for locks; it writes nothing yet.
    static func open(_ path: String, _ options: Options) throws -> Connection {
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA busy_timeout = \(options.busyTimeout.microseconds / 1_000)")
        return connection
    }

    /// WAL, the durability setting and foreign keys: what every connection of the store runs with.
    static func configure(_ connection: Connection, options: Options) throws {
        let mode = try connection.scalar("PRAGMA journal_mode = WAL")?.string ?? ""
        if mode.lowercased() != "wal" {
            throw DatabaseError(code: SQLITE_ERROR, message: "cannot switch to WAL journal mode (got \(mode))")
        }
        try connection.execute("PRAGMA synchronous = \(options.synchronous.rawValue); PRAGMA foreign_keys = ON")
    }

    static func classify(_ error: DatabaseError, path: String) -> StoreError {
        switch error.primaryCode {
        case SQLITE_NOTADB, SQLITE_CORRUPT: .corrupt(path: path, error.message)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH: .cannotOpen(path: path, error)
        default: .database(error)
        }
    }

    // MARK: Writing

    public func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        // A trigger is answered only once it is recorded, so creations and trigger records are
        // refused at once while writes fail; transitions of runs in flight are kept and retried.
        let refusable = entries.contains {
            switch $0 {
            case .created, .trigger: true
            default: false
            }
        }
        submit(Item(entries: entries, completion: completion, refusedWhileFailing: refusable))
    }

    /// Queues an item for the writer, or fails it at once: always when the store is closed, and
    /// while writes fail when it is one that must not wait.
    private func submit(_ item: Item) {
        condition.lock()
        let refusal = closing ? "the store is closed" : item.refusedWhileFailing ? failure : nil
        if let refusal {
            condition.unlock()
            item.completion(.failure(.storeUnavailable(refusal)))
            return
        }
        pending.append(item)
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the writer thread, in a write transaction grouped with journal items, and
    /// returns what it returned. Like creations, it is refused while writes fail.
    func perform<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let box = ResultBox<T>()
        return try await withCheckedThrowingContinuation { continuation in
            let item = Item(entries: [], completion: { result in
                switch result {
                case .success:
                    if let value = box.value { continuation.resume(returning: value) }
                    else { continuation.resume(throwing: BatonError.internalError("the writer lost a result")) }
                case let .failure(error):
                    continuation.resume(throwing: error)
                }
            }, refusedWhileFailing: true, work: { connection in box.value = try body(connection) })
            submit(item)
        }
    }

    /// Waits until the writer thread comes round its loop: it is alive and not stuck in SQLite
    /// (it answers between retries while writes fail, so a full disk does not look like a hang).
    public func ping() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if writerDone {
                condition.unlock()
                continuation.resume()
                return
            }
            pings.append { continuation.resume() }
            condition.signal()
            condition.unlock()
        }
    }

    /// How many journal items and write transactions have been committed since the store opened.
    public var commitStatistics: (items: Int, transactions: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (committedItems, committedTransactions)
    }

    /// Why writes fail right now, or nil when the store writes.
    public var unavailableReason: String? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    /// Writes what is pending, stops the writer and waits for it, at most `timeout`.
    /// Returns how many journal items could not be written.
    @discardableResult
    public func close(timeout: Duration = .seconds(10)) -> Int {
        condition.lock()
        closing = true
        condition.broadcast()
        let deadline = Date().addingTimeInterval(timeout.secondsValue)
        while !writerDone && condition.wait(until: deadline) {}
        let lost = (writerDone ? 0 : pending.count) + unwritten
        condition.unlock()
        return lost
    }

    // MARK: Reading

    /// Runs a query on the reader connection, off the cooperative thread pool.
    public func read<T: Sendable>(_ body: @escaping @Sendable (History) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            readQueue.async {
                continuation.resume(with: Result { try body(History(connection: self.reader)) })
            }
        }
    }

    public func recoverableState() throws(BatonError) -> RecoverableState {
        do {
            return try readQueue.sync { try History(connection: reader).recoverableState() }
        } catch {
            throw .storeUnavailable("\(error)")
        }
    }
}

/// Carries a value from the writer thread to its completion (set before, read after, on one thread).
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
