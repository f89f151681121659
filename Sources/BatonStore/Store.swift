import BatonCore
import CSQLite
import Dispatch
import FoundationEssentials
import Synchronization

/// Baton's history in SQLite: a writer (a `SerialWorker` that owns the writing connection and
/// commits the journal in groups) and a reader (another, for queries), so that reads never
/// wait for writes and no SQLite call blocks the cooperative thread pool. Each worker's thread
/// ends after `idleThreads` with nothing to do, and the next job starts another.
///
/// Write failures never lose a transition: when the disk is full or the database locked, the
/// writer keeps the entries in memory and retries them, in order, before anything newer; only
/// the creation of new runs is refused (`store_unavailable`) while that lasts, or while
/// `maxQueued` writes wait (the writer is that far behind).
public final class Store: RunStore, Sendable {
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
        /// The most items that wait for the writer before new triggers are refused.
        public var maxQueued: Int
        /// How long to wait before retrying after a write failed for lack of space or an I/O error.
        public var retryDelay: Duration
        /// How long the writer's and the reader's threads stay with nothing to do.
        public var idleThreads: Duration
        /// Told why writes fail when they start failing, and nil when they work again (for the log).
        public var onProblem: (@Sendable (String?) -> Void)?
        /// Told of each committed transaction: how long it took and how many items it carried.
        public var onCommit: (@Sendable (_ seconds: Double, _ items: Int, _ synced: Bool) -> Void)?
        /// Shown the writer's connection after each commit, on the writer's thread (tests: what it
        /// committed with, `PRAGMA synchronous`); nothing in batond sets it.
        var afterCommit: (@Sendable (Connection) -> Void)?
        /// Told of each migration as it begins (version, name), on the opening thread: some take
        /// long on a large history (those that rewrite every run).
        public var willMigrate: (@Sendable (_ version: Int, _ name: String) -> Void)?
        /// Told, on the opening thread, of what a committed migration left undone and why (version,
        /// words for the log): migration 17 on a defensive library keeps the phase's old check.
        public var migrationNote: (@Sendable (_ version: Int, _ note: String) -> Void)?
        /// Whether the history keeps the trigram search index (`SearchIndex`): made at open when
        /// missing, dropped when present and not asked for. Off: `search` scans the kept output.
        public var searchIndex = false
        /// Told, on the opening thread, before the index is made (long on a large history) or dropped.
        public var willChangeSearchIndex: (@Sendable (SearchIndex.Change) -> Void)?

        public init(synchronous: Synchronous = .full, busyTimeout: Duration = .seconds(5), maxBatch: Int = 2_000,
                    maxQueued: Int = 50_000, retryDelay: Duration = .milliseconds(500), idleThreads: Duration = .seconds(10),
                    onProblem: (@Sendable (String?) -> Void)? = nil) {
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
            self.maxBatch = maxBatch
            self.maxQueued = maxQueued
            self.retryDelay = retryDelay
            self.idleThreads = idleThreads
            self.onProblem = onProblem
        }
    }

    /// One item for the writer: entries written in one savepoint of a group's transaction.
    struct Item: Sendable {
        var entries: [JournalEntry]
        var completion: @Sendable (Result<Void, BatonError>) -> Void
        /// Items that answer a trigger (creations, trigger records) are refused while the store cannot
        /// write; the others are kept.
        var refusedWhileFailing: Bool
        /// Other writing work (pruning), run in the item's savepoint after its entries.
        var work: (@Sendable (Connection) throws -> Void)?
    }

    /// What other threads read of the writer's progress.
    struct Status {
        /// Why the last write failed, while writes keep failing.
        var failure: String?
        /// Journal items and transactions committed so far (the average group size is their ratio).
        var committedItems = 0
        var committedTransactions = 0
        /// Of those, the transactions committed with `synchronous = NORMAL` (`Store.relaxes`): no
        /// `fdatasync` of their own, unless SQLite's checkpoint or WAL restart syncs then.
        var unsyncedTransactions = 0
        /// Batches that found the database locked by another connection past the busy timeout, and wait to try again.
        var busyRetries = 0
        /// How many journal items failed because the file is gone (never written), and their
        /// transitions, for the log at exit: not their output, which would only fill memory.
        var stranded = 0
        var strandedTransitions: [Transition] = []
        /// Why the file is gone, once it is.
        var lost: String?
        /// The entries of the items given up on at close, the disk staying full.
        var givenUp: [[JournalEntry]] = []
    }

    public let path: String
    let options: Options
    let status = Locked(Status())
    /// The database file as opened: a file at the path with another identity, or none, means it
    /// was deleted or replaced under batond.
    let identity: FileIdentity?
    let writer: SerialWorker<Item>
    /// Runs queries on the reader connection.
    private let reader: SerialWorker<@Sendable (Connection) -> Void>
    /// Runs searches on a connection of their own: a scan of the whole kept output (any local user
    /// may ask for one) never holds up the history reads behind it.
    private let searcher: SerialWorker<@Sendable (Connection) -> Void>

    /// Opens (creating if needed) and migrates the history at `path`; the workers start with their first job.
    public init(path: String, options: Options = Options()) throws(StoreError) {
        self.path = path
        self.options = options
        let writing: Connection, reading: Connection, searching: Connection
        do {
            writing = try Self.open(path, options)
            // Refuse a newer or foreign database before anything (even the journal mode) is written.
            let found = try Migrator.version(of: writing)
            if found > Migrator.latestVersion {
                throw StoreError.schemaTooNew(path: path, found: found, supported: Migrator.latestVersion)
            }
            try Self.refuseReadOnly(writing, path: path)
            try Self.configure(writing, options: options)
            try Migrator.migrate(writing, willApply: { [willMigrate = options.willMigrate] in willMigrate?($0.version, $0.name) },
                                 noted: { [note = options.migrationNote] in note?($0.version, $1) })
            try SearchIndex.apply(wanted: options.searchIndex, on: writing, willChange: options.willChangeSearchIndex)
            reading = try Self.open(path, options)
            try Self.configure(reading, options: options)
            try reading.execute("PRAGMA query_only = 1")
            searching = try Self.open(path, options)
            try Self.configure(searching, options: options)
            try searching.execute("PRAGMA query_only = 1")
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.classify(error, path: path)
        } catch {
            throw .database(DatabaseError(code: SQLITE_ERROR, message: "\(error)"))
        }
        identity = FileIdentity(path: path)
        let highestRunID = (try? History(connection: reading).recoverableState().nextRunID - 1) ?? 0
        reader = SerialWorker(name: "baton-store-read", capacity: 1_000, idleTimeout: options.idleThreads, state: reading) { connection, batch in
            for query in batch.jobs { query(connection) }
        }
        searcher = SerialWorker(name: "baton-search", capacity: 16, idleTimeout: options.idleThreads, state: searching) { connection, batch in
            for query in batch.jobs { query(connection) }
        }
        let writerState = WriterState(connection: writing, highestRunID: highestRunID)
        writer = SerialWorker(name: "baton-store", capacity: options.maxQueued, maxBatch: options.maxBatch,
                              idleTimeout: options.idleThreads, state: writerState) { [path, options, identity, status] state, batch in
            Self.write(&batch, &state, Context(path: path, options: options, identity: identity, status: status))
        }
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
        // An end is never refused: the hook runs it creates (`on:`) are kept and retried with it.
        let refusable = !entries.contains(where: \.isEnd) && entries.contains {
            switch $0 {
            case .created, .trigger, .delivery: true
            default: false
            }
        }
        submit(Item(entries: entries, completion: completion, refusedWhileFailing: refusable))
    }

    /// Queues an item for the writer, or fails it at once: always when the store is closed, and,
    /// when it is one that must not wait, while writes fail or the writer is `maxQueued` behind.
    func submit(_ item: Item) {
        if item.refusedWhileFailing, let failure = status.withLock({ $0.failure }) {
            return item.completion(.failure(.storeUnavailable(failure)))
        }
        do throws(WorkerRefusal) {
            try writer.submit(item, bounded: item.refusedWhileFailing)
        } catch .full {
            item.completion(.failure(.storeUnavailable("the history writer is behind: \(options.maxQueued) writes wait")))
        } catch {
            item.completion(.failure(.storeUnavailable("the store is closed")))
        }
    }

    /// Runs `body` on the writer thread, in a write transaction grouped with journal items, and
    /// returns what it returned. Like creations, it is refused while writes fail.
    func perform<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        // Set by the work and read by the completion, both on the writer's thread: a lock only that thread takes.
        let value = WriterSlot<T>()
        return try await withCheckedThrowingContinuation { continuation in
            let item = Item(entries: [], completion: { result in
                switch result {
                case .success:
                    if let value = value.value { continuation.resume(returning: value) }
                    else { continuation.resume(throwing: BatonError.internalError("the writer lost a result")) }
                case let .failure(error):
                    continuation.resume(throwing: error)
                }
            }, refusedWhileFailing: true, work: { connection in
                let result = try body(connection)
                value.value = result
            })
            submit(item)
        }
    }

    /// Waits until the writer comes round its loop: it is alive and not stuck in SQLite (it
    /// answers between retries while writes fail, so a full disk does not look like a hang).
    public func ping() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writer.ping { continuation.resume() }
        }
    }

    /// How many journal items and write transactions have been committed since the store opened,
    /// and how many of those transactions without an `fdatasync` (`Store.relaxes`).
    public var commitStatistics: (items: Int, transactions: Int, unsynced: Int) {
        status.withLock { ($0.committedItems, $0.committedTransactions, $0.unsyncedTransactions) }
    }

    /// How many times a batch found the database locked (another process holding its write lock
    /// past the busy timeout) and was kept to be tried again.
    public var busyRetries: Int { status.withLock { $0.busyRetries } }

    /// Why writes fail right now, or nil when the store writes.
    public var unavailableReason: String? { status.withLock { $0.failure } }

    /// Writes what is pending, stops the writer and waits for it, at most `timeout`, then closes
    /// the reader. Returns how many journal items could not be written (their completions are
    /// not called: batond is exiting).
    @discardableResult
    public func close(timeout: Duration = .seconds(10)) -> Int {
        closeReporting(timeout: timeout).count
    }

    /// What `close` could not write: how many journal items, and the transitions among them
    /// that it still had (for the log: recovery ends those runs at the next start).
    public struct Unwritten: Sendable {
        public var count: Int
        public var transitions: [Transition]
        /// Why the history file is gone, where it is: then no start recovers these runs.
        public var historyLost: String?
    }

    /// `close`, saying what was not written. While writes fail (a full disk) the writer is given
    /// `failingTimeout` only: it would only go on failing, and batond is asked to exit.
    public func closeReporting(timeout: Duration = .seconds(10), failingTimeout: Duration = .seconds(2)) -> Unwritten {
        let left = writer.close(timeout: unavailableReason == nil ? timeout : failingTimeout)
        reader.close(timeout: .seconds(1))
        searcher.close(timeout: .seconds(1))
        let (stranded, strandedTransitions, givenUp, lost) = status.withLock { ($0.stranded, $0.strandedTransitions, $0.givenUp, $0.lost) }
        let transitions = strandedTransitions + (givenUp + left.abandoned.map(\.entries)).joined().compactMap(\.phaseChange)
        return Unwritten(count: left.count + stranded + givenUp.count, transitions: transitions, historyLost: lost)
    }

    // MARK: Reading

    /// Runs a query on the reader connection (`searching`: the search connection), off the
    /// cooperative thread pool.
    public func read<T: Sendable>(searching: Bool = false, _ body: @escaping @Sendable (History) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            do throws(WorkerRefusal) {
                try (searching ? searcher : reader).submit { connection in
                    continuation.resume(with: Result { try body(History(connection: connection)) })
                }
            } catch {
                let full = searching ? "too many searches wait" : "too many queries wait"
                continuation.resume(throwing: BatonError.storeUnavailable(error == .full ? full : "the store is closed"))
            }
        }
    }

    /// What a start recovers: the unfinished runs and where run ids go on. Read on the reader
    /// connection, past its queue's bound (at start nothing else reads yet), off the cooperative pool.
    public func recoverableState() async throws(BatonError) -> RecoverableState {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RecoverableState, BatonError>, Never>) in
            do throws(WorkerRefusal) {
                try reader.submit({ connection in
                    continuation.resume(returning: Result { () throws(BatonError) in
                        do { return try History(connection: connection).recoverableState() } catch { throw .storeUnavailable("\(error)") }
                    })
                }, bounded: false)
            } catch {
                continuation.resume(returning: .failure(.storeUnavailable("the store is closed")))
            }
        }
        return try result.get()
    }
}

extension JournalEntry {
    /// The phase change this entry writes, if it writes one.
    var phaseChange: Transition? {
        switch self {
        case let .created(_, transition), let .transition(transition): transition
        default: nil
        }
    }
}

/// A value one job's work sets and its completion reads, both on the writer's thread (one after
/// the other). Its mutex is never waited for (only that thread takes it); it makes the slot a
/// `Sendable` the compiler checks, where a bare `var` needed `@unchecked`. Found held, it stops
/// the process, naming itself: a second thread took it, and it is not the lock it claims to be.
final class WriterSlot<Value: Sendable>: Sendable {
    private let slot = Mutex<Value?>(nil) // ownership proof: only the writer's thread takes it

    var value: Value? {
        get { taken { $0 } }
        set { taken { $0 = newValue } }
    }

    private func taken<Result: Sendable>(_ body: (inout Value?) -> Result) -> Result {
        guard let result = slot.withLockIfAvailable({ body(&$0) }) else { preconditionFailure("WriterSlot: taken by two threads at once") }
        return result
    }
}
