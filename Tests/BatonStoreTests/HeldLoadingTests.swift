import BatonCore
@testable import BatonStore
import Dispatch
import Foundation
import Synchronization
import Testing

/// An item nobody waits for (a run's `loading` and its process group) does not start a commit by
/// itself: it rides in the next item that must commit, or goes alone once `holdUnwaited` has passed
/// on the writer's clock. Real SQLite files; the clock stands still until the test moves it, and a
/// ping (answered where the writer decides what to do next) lets the writer see each move.
@Suite("Store writer: a loading rides the next commit")
struct HeldLoadingTests {
    typealias Writer = StoreWriterTests

    /// A clock that moves only when the test moves it.
    final class StillClock: ReactorClock {
        private let time = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { time.withLock { $0 } }
        var advancesByItself: Bool { false }
        func advance(_ by: Duration) { time.withLock { $0 += by } }
    }

    /// The answer of an item handed over as one that can wait.
    final class Held: Sendable {
        private let result = Mutex<Result<Void, BatonError>?>(nil)
        private let given = DispatchSemaphore(value: 0)
        init(_ store: Store, _ entries: [JournalEntry]) {
            store.enqueue(entries, canWait: true) { [self] result in
                self.result.withLock { $0 = result }
                given.signal()
            }
        }
        /// Given yet (without waiting).
        var answered: Bool { result.withLock { $0 != nil } }
        /// Waits for the answer (the writer's thread gives it), at most 10 s.
        var value: Result<Void, BatonError>? { given.wait(timeout: .now() + 10) == .success ? result.withLock { $0 } : nil }
    }

    static func store(_ dir: TemporaryDirectory, _ clock: StillClock, hold: Duration = .milliseconds(5)) throws -> Store {
        var options = Store.Options()
        options.clock = clock
        options.holdUnwaited = hold
        return try Store(path: dir.file("h.sqlite"), options: options)
    }

    static func group(_ id: Int64) -> JournalEntry { .processGroup(runID: id, pgid: 4_000 + Int32(id), identity: "boot:\(id)") }

    static func end(_ id: Int64) -> JournalEntry {
        .transition(Transition(runID: id, seq: 3, from: .loading, to: .success, at: Writer.now, detail: TransitionDetail(reason: "exit", exitCode: 0)))
    }

    /// The run's phase and its transitions' phases, read from the file on a connection of its own.
    static func phases(_ dir: TemporaryDirectory, _ id: Int64) throws -> (run: String?, transitions: [String], pgid: Int64?) {
        let db = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        let run = try db.withStatement("SELECT phase, pgid FROM runs WHERE id = \(id)") { statement in
            try statement.step() ? (statement.string(0), statement.int64(1)) : (nil, nil)
        }
        let transitions = try db.withStatement("SELECT to_phase FROM transitions WHERE run_id = \(id) ORDER BY seq") { statement in
            var phases: [String] = []
            while try statement.step() { phases.append(statement.string(0) ?? "?") }
            return phases
        }
        return (run.0, transitions, run.1)
    }

    @Test("a held loading and process group commit with the next item that must commit, in one transaction, in order")
    func ridesTheNextCommit() async throws {
        let dir = TemporaryDirectory(), clock = StillClock()
        let store = try Self.store(dir, clock)
        defer { store.close() }
        #expect(Writer.Answer(store, [Writer.created(1)]).value?.isSuccess == true)
        let before = store.commitStatistics
        let held = Held(store, [Writer.loading(1), Self.group(1)])
        await store.ping()
        #expect(!held.answered, "nothing that must commit came, and the clock stood still")
        #expect(store.commitStatistics == before)
        #expect(try Self.phases(dir, 1) == ("queued", ["queued"], nil))
        // The next item that must commit: another run's creation (a trigger's answer waits for it).
        #expect(Writer.Answer(store, [Writer.created(2)]).value?.isSuccess == true)
        #expect(held.value?.isSuccess == true)
        #expect(store.commitStatistics == (before.items + 2, before.transactions + 1), "both items in one transaction")
        #expect(try Self.phases(dir, 1) == ("loading", ["queued", "loading"], 4_001))
        // And a run's end: its loading, held, goes first, in the end's transaction (the end clears the group).
        let again = Held(store, [Writer.loading(2), Self.group(2)])
        await store.ping()
        #expect(!again.answered)
        #expect(Writer.Answer(store, [Self.end(2)]).value?.isSuccess == true)
        #expect(again.value?.isSuccess == true)
        #expect(store.commitStatistics == (before.items + 4, before.transactions + 2))
        #expect(try Self.phases(dir, 2) == ("success", ["queued", "loading", "success"], nil))
    }

    @Test("a held loading goes alone once holdUnwaited has passed on the writer's clock, not before")
    func goesAloneAfterTheBound() async throws {
        let dir = TemporaryDirectory(), clock = StillClock()
        let store = try Self.store(dir, clock)
        defer { store.close() }
        #expect(Writer.Answer(store, [Writer.created(1)]).value?.isSuccess == true)
        let before = store.commitStatistics
        let held = Held(store, [Writer.loading(1)])
        await store.ping()
        clock.advance(.milliseconds(4))
        await store.ping()
        #expect(!held.answered, "4 ms of 5")
        #expect(store.commitStatistics == before)
        clock.advance(.milliseconds(1))
        await store.ping()
        #expect(held.value?.isSuccess == true)
        #expect(store.commitStatistics == (before.items + 1, before.transactions + 1), "alone")
        #expect(try Self.phases(dir, 1) == ("loading", ["queued", "loading"], nil))
    }

    @Test("with holdUnwaited zero an item that can wait commits at once; close commits a held one")
    func zeroAndClose() async throws {
        let dir = TemporaryDirectory(), clock = StillClock()
        let never = try Self.store(dir, clock, hold: .zero)
        #expect(Writer.Answer(never, [Writer.created(1)]).value?.isSuccess == true)
        #expect(Held(never, [Writer.loading(1)]).value?.isSuccess == true)
        never.close()
        let store = try Self.store(dir, clock)
        #expect(Writer.Answer(store, [Writer.created(2)]).value?.isSuccess == true)
        let held = Held(store, [Writer.loading(2), Self.group(2)])
        await store.ping()
        #expect(!held.answered)
        #expect(store.close() == 0)
        #expect(held.value?.isSuccess == true)
        #expect(try Self.phases(dir, 2) == ("loading", ["queued", "loading"], 4_002))
    }
}
