import BatonCore
@testable import BatonStore
import Dispatch
import Foundation
import Testing

/// A batch of process groups alone commits without an `fdatasync` (`Store.relaxes`): a crash of the
/// machine ends the processes it names; a crash of batond leaves it in the page cache. Real files.
@Suite("Commits without an fdatasync", .offPool)
struct UnsyncedCommitTests {
    static func group(_ id: Int64) -> JournalEntry { .processGroup(runID: id, pgid: Int32(4_000 + id), identity: "boot:\(id)") }

    /// An item of `entries` (and `work`), its answer awaited.
    static func write(_ store: Store, _ entries: [JournalEntry], work: (@Sendable (Connection) throws -> Void)? = nil) -> Bool {
        let done = DispatchSemaphore(value: 0), succeeded = Locked(false)
        let item = Store.Item(entries: entries, completion: { result in
            succeeded.withLock { $0 = result.isSuccess }
            done.signal()
        }, refusedWhileFailing: false, work: work)
        guard (try? store.writer.submit(item)) != nil, done.wait(timeout: .usualWait) == .success else { return false }
        return succeeded.withLock { $0 }
    }

    /// The writer connection's `PRAGMA synchronous` (2: FULL, 1: NORMAL), read in an item of other work.
    static func synchronous(_ store: Store) -> Int64? {
        let value = Locked<Int64?>(nil)
        guard write(store, [], work: { connection in
            let read = try connection.scalar("PRAGMA synchronous")?.int64
            value.withLock { $0 = read }
        }) else { return nil }
        return value.withLock { $0 }
    }

    @Test("a run's process group alone commits unsynced (the connection NORMAL for its commit); its creation, its loading and work around it are synced, the connection FULL again for them")
    func processGroupAlone() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        // What each commit was made with, as the writer's connection says right after it (2: FULL, 1: NORMAL).
        let committedWith = Locked<[Int64]>([])
        var options = Store.Options(maxBatch: 1)
        options.afterCommit = { connection in
            let level = (try? connection.scalar("PRAGMA synchronous"))?.int64 ?? -1
            committedWith.withLock { $0.append(level) }
        }
        let store = try Store(path: path, options: options)
        #expect(Self.write(store, [StoreWriterTests.created(1)]) && Self.write(store, [StoreWriterTests.loading(1)]))
        #expect(store.commitStatistics.unsynced == 0)
        #expect(Self.write(store, [Self.group(1)]))
        #expect(store.commitStatistics.unsynced == 1)
        #expect(Self.synchronous(store) == 2, "work after it is synced again")
        #expect(Self.write(store, [Self.group(1)]))
        // Committed: another connection reads it (as a batond started after a crash of this one would).
        #expect(try Connection(path: path, readOnly: true).scalar("SELECT pgid FROM runs WHERE id = 1")?.int64 == 4_001)
        #expect(Self.write(store, [.transition(Transition(runID: 1, seq: 3, from: .loading, to: .success, at: StoreWriterTests.now))]))
        #expect(Self.synchronous(store) == 2)
        let statistics = store.commitStatistics
        #expect(statistics.unsynced == 2 && statistics.transactions == 7, "\(statistics)")
        // created, loading, group, (work), group, success, (work)
        #expect(committedWith.withLock { $0 } == [2, 2, 1, 2, 1, 2, 2])
        store.close()
    }

    @Test("a store configured NORMAL or OFF is left as configured: nothing counted unsynced, its pragma unchanged", arguments: [
        (Store.Synchronous.normal, Int64(1)), (.off, 0),
    ])
    func configuredLighter(synchronous: Store.Synchronous, pragma: Int64) throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: Store.Options(synchronous: synchronous, maxBatch: 1))
        #expect(Self.write(store, [StoreWriterTests.created(1)]) && Self.write(store, [Self.group(1)]))
        #expect(store.commitStatistics.unsynced == 0)
        #expect(Self.synchronous(store) == pragma)
        store.close()
    }

    @Test("which batches commit unsynced: process groups alone, in any number of items; never with anything else, an empty item (a barrier someone waits on) or other work")
    func relaxes() {
        func item(_ entries: [JournalEntry], work: Bool = false) -> Store.Item {
            let nothing: @Sendable (Connection) throws -> Void = { _ in }
            return Store.Item(entries: entries, completion: { _ in }, refusedWhileFailing: false, work: work ? nothing : nil)
        }
        let group = Self.group(1), loading = StoreWriterTests.loading(1)
        #expect(Store.relaxes([item([group])]))
        #expect(Store.relaxes([item([group, Self.group(2)]), item([Self.group(3)])]))
        #expect(!Store.relaxes([]))
        #expect(!Store.relaxes([item([group]), item([loading])]))
        #expect(!Store.relaxes([item([group, loading])]))
        #expect(!Store.relaxes([item([group]), item([])]))
        #expect(!Store.relaxes([item([group], work: true)]))
        #expect(!Store.relaxes([item([StoreWriterTests.created(1)])]))
    }
}
