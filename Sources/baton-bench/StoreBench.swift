import BatonCore
import BatonStore
import Foundation
import Synchronization

/// 1. Transitions recorded per second through the store's group-committing writer, against raw
/// SQLite writes of the same rows with the same pragmas in this process.
enum StoreBench {
    static func run(seconds: Double) async throws -> [Figure] {
        let directory = scratchDirectory("store")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Baton: 64 concurrent writers, each taking runs through queued → loading → success,
        // waiting for each commit as the conductor does.
        let store = try Store(path: directory + "/baton.sqlite")
        let writers = 64
        let counter = Counter()
        // Run ids from one counter, as the conductor hands them out: the rows of runs in flight
        // together sit side by side in the table and its indexes, as in the raw writes below.
        let ids = Counter()
        let watch = Stopwatch()
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    while ContinuousClock.now < deadline {
                        let id = Int64(ids.next())
                        let now = Timestamp.now
                        let run = RunSnapshot(id: id, action: "bench", key: "bench \(writer)", phase: .queued, policy: .reject,
                                              params: [:], trigger: nil, queuedAt: now)
                        _ = await commit(store, [.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: now))])
                        _ = await commit(store, [.transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: .now,
                                                                        detail: TransitionDetail(attempt: 1)))])
                        _ = await commit(store, [.transition(Transition(runID: id, seq: 3, from: .loading, to: .success, at: .now,
                                                                        detail: TransitionDetail(exitCode: 0)))])
                        counter.add(3)
                    }
                }
            }
        }
        let batonRate = Double(counter.value) / watch.seconds
        let statistics = store.commitStatistics
        store.close()

        // Raw: the same rows on a connection with the same pragmas (WAL, synchronous=FULL).
        let single = try raw(path: directory + "/raw1.sqlite", perTransaction: 1, seconds: seconds)
        let batched = try raw(path: directory + "/raw100.sqlite", perTransaction: 100, seconds: seconds)
        return [
            Figure("store: transitions/s, 64 concurrent writers (synchronous=FULL)", batonRate, "/s",
                   baseline: ("raw SQLite, 100 per transaction", batched), target: "≥ 0.5 of raw batched",
                   note: String(format: "%.1f items per transaction", Double(statistics.items) / Double(max(statistics.transactions, 1)))),
            Figure("store: raw SQLite, 1 transition per transaction", single, "/s",
                   baseline: ("raw SQLite, 100 per transaction", batched)),
        ]
    }

    static func commit(_ store: Store, _ entries: [JournalEntry]) async -> Result<Void, BatonError> {
        await withCheckedContinuation { continuation in store.enqueue(entries) { continuation.resume(returning: $0) } }
    }

    /// Writes runs as the journal writer does (a transition row plus the run row's update), with
    /// `perTransaction` transitions per transaction, for `seconds`; returns transitions per second.
    static func raw(path: String, perTransaction: Int, seconds: Double) throws -> Double {
        try migrateFile(path)
        let connection = try Connection(path: path)
        _ = try connection.scalar("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        let watch = Stopwatch()
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var written = 0
        var id: Int64 = 0
        var step = 0
        var inTransaction = 0
        while ContinuousClock.now < deadline || inTransaction > 0 {
            if inTransaction == 0 { try connection.execute("BEGIN IMMEDIATE") }
            let now = Timestamp.now.rawValue
            switch step {
            case 0:
                id += 1
                try connection.cached("""
                    INSERT INTO runs (id, action, key, phase, policy, params, queued_at) VALUES (?, 'bench', 'bench', 'queued', 'reject', '{}', ?)
                    """) { try $0.bind([.integer(id), .integer(now)]); _ = try $0.step() }
                try transition(connection, id, 1, nil, "queued", now)
            case 1:
                try connection.cached("UPDATE runs SET phase = 'loading', started_at = ?, attempts = 1 WHERE id = ?") {
                    try $0.bind([.integer(now), .integer(id)]); _ = try $0.step()
                }
                try transition(connection, id, 2, "queued", "loading", now)
            default:
                try connection.cached("UPDATE runs SET phase = 'success', ended_at = ?, exit_code = 0, reason = 'exit' WHERE id = ?") {
                    try $0.bind([.integer(now), .integer(id)]); _ = try $0.step()
                }
                try transition(connection, id, 3, "loading", "success", now)
            }
            step = (step + 1) % 3
            written += 1
            inTransaction += 1
            if inTransaction == perTransaction || ContinuousClock.now >= deadline {
                try connection.execute("COMMIT")
                inTransaction = 0
            }
        }
        return Double(written) / watch.seconds
    }

    static func transition(_ connection: Connection, _ id: Int64, _ seq: Int64, _ from: String?, _ to: String, _ at: Int64) throws {
        try connection.cached("INSERT INTO transitions (run_id, seq, from_phase, to_phase, at, detail) VALUES (?, ?, ?, ?, ?, '{}')") {
            try $0.bind([.integer(id), .integer(seq), from.map { .text($0) } ?? .null, .text(to), .integer(at)])
            _ = try $0.step()
        }
    }
}

/// Creates and migrates a database file with batond's schema, then closes it.
func migrateFile(_ path: String) throws {
    let store = try Store(path: path, options: Store.Options(synchronous: .off))
    store.close()
}

/// A counter shared by tasks and threads.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ n: Int = 1) { count.add(n, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
    /// Adds one; the count after it.
    func next() -> Int { count.add(1, ordering: .relaxed).newValue }
}
