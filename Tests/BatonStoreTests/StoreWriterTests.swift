import BatonCore
@testable import BatonStore
import Dispatch
import Foundation
import Testing

/// The writer on its worker: backpressure, retries in order, shutdown. The writer is held with
/// a gate inside its own transaction (a `perform` that waits) or with another connection's write
/// lock; pings say when it has come round.
@Suite("Store writer", .offPool)
struct StoreWriterTests {
    static let now = Timestamp.now

    static func created(_ id: Int64) -> JournalEntry {
        .created(RunSnapshot(id: id, action: "a", key: "a\(id)", phase: .queued, policy: .join, params: [:], trigger: nil, queuedAt: now),
                 Transition(runID: id, seq: 1, from: nil, to: .queued, at: now))
    }

    static func loading(_ id: Int64) -> JournalEntry {
        .transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: now, detail: TransitionDetail(attempt: 1)))
    }

    /// Holds the writer inside a transaction until `open` is called.
    final class WriterGate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        func hold(_ store: Store) throws {
            try store.writer.submit(Store.Item(entries: [], completion: { _ in }, refusedWhileFailing: false, work: { _ in
                self.entered.signal()
                self.gate.wait()
            }))
        }
        func open() { gate.signal() }
    }

    /// An answer from the writer, awaited on a semaphore (the writer's thread gives it).
    final class Answer: Sendable {
        private let result = Locked<Result<Void, BatonError>?>(nil)
        private let given = DispatchSemaphore(value: 0)
        init(_ store: Store, _ entries: [JournalEntry]) {
            store.enqueue(entries) { [self] result in
                self.result.withLock { $0 = result }
                given.signal()
            }
        }
        var value: Result<Void, BatonError>? {
            given.wait(timeout: .usualWait) == .success ? result.withLock { $0 } : nil
        }
    }

    @Test("while maxQueued writes wait, a new trigger is refused, transitions are kept, and all are written in order")
    func backpressure() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: Store.Options(maxBatch: 1, maxQueued: 2))
        let writer = WriterGate()
        try writer.hold(store)
        #expect(writer.entered.wait(timeout: .usualWait) == .success)
        let first = Answer(store, [Self.created(1)]), second = Answer(store, [Self.created(2)])
        let refused = Answer(store, [Self.created(3)]).value
        guard case let .failure(.storeUnavailable(reason)) = refused else { Issue.record("not refused: \(String(describing: refused))"); return }
        #expect(reason.contains("behind"))
        let kept = Answer(store, [Self.loading(1)])
        #expect(store.writer.queued == 3)
        writer.open()
        #expect(first.value?.isSuccess == true && second.value?.isSuccess == true && kept.value?.isSuccess == true)
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        #expect(try connection.scalar("SELECT group_concat(id || ':' || phase, ',') FROM (SELECT * FROM runs ORDER BY id)")?.string
            == "1:loading,2:queued")
    }

    @Test("a busy database: the held write and those behind it are retried in order, none lost; pings answer meanwhile")
    func retriesInOrder() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let store = try Store(path: path, options: Store.Options(busyTimeout: .milliseconds(20), maxBatch: 1))
        let locker = try Connection(path: path)
        try locker.execute("BEGIN IMMEDIATE")
        let creation = Answer(store, [Self.created(1)]), transition = Answer(store, [Self.loading(1)])
        // Two pings in a row: the second is answered only after the writer's first try came back busy.
        await store.ping()
        await store.ping()
        #expect(store.commitStatistics.transactions == 0)
        try locker.execute("COMMIT")
        #expect(creation.value?.isSuccess == true)
        #expect(transition.value?.isSuccess == true)
        #expect(store.commitStatistics.transactions == 2)
        store.close()
        #expect(try Connection(path: path, readOnly: true).scalar("SELECT phase FROM runs WHERE id = 1")?.string == "loading")
    }

    @Test("close writes what is queued; afterwards writes are refused at once")
    func closeDrains() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: Store.Options(maxBatch: 1))
        let writer = WriterGate()
        try writer.hold(store)
        #expect(writer.entered.wait(timeout: .usualWait) == .success)
        let answers = Locked<[Int64: Result<Void, BatonError>]>([:])
        for id in Int64(1)...20 { store.enqueue([Self.created(id)]) { result in answers.withLock { $0[id] = result } } }
        let closed = Task.detached { store.close() }
        writer.open()
        #expect(await closed.value == 0)
        #expect(answers.withLock { $0 }.count == 20 && answers.withLock { $0 }.values.allSatisfy(\.isSuccess))
        guard case .failure(.storeUnavailable) = await store.commit([Self.created(21)]) else { Issue.record("written after close"); return }
        #expect(try Connection(path: dir.file("h.sqlite"), readOnly: true).scalar("SELECT count(*) FROM runs")?.int64 == 20)
    }

    @Test("close closes the store's three connections before it returns: the last one checkpoints the WAL and removes it")
    func closeRemovesTheWAL() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let store = try Store(path: path, options: Store.Options(maxBatch: 1))
        guard case .success = await store.commit([Self.created(1)]) else { Issue.record("not written"); return }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(store.close() == 0)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "a connection still open after close")
        withExtendedLifetime(store) {}
    }

    @Test("close that runs out of time counts what it could not write")
    func closeTimesOut() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: Store.Options(maxBatch: 1))
        let writer = WriterGate()
        try writer.hold(store)
        #expect(writer.entered.wait(timeout: .usualWait) == .success)
        for id in Int64(1)...5 { store.enqueue([Self.created(id)]) { _ in } }
        #expect(store.close(timeout: .milliseconds(10)) == 6)
        writer.open()
    }
}
