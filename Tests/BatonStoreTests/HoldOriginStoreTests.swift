import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Schema 15 in a real SQLite history: a held pause (`baton pause --hold`) comes back held, and
/// the uid at a run's origin (`JournalEntry.origin`, written with its creation) comes back with
/// the unfinished run after a restart.
@Suite("Held pauses and run origins in the store")
struct HoldOriginStoreTests {
    static let at = Timestamp(rawValue: 1_800_000_000_000_000)

    @Test("a held pause is kept held; a plain one plain")
    func heldPause() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            let store = try Store(path: path)
            defer { store.close() }
            try await store.commit([
                .pause(ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Self.at, hold: true)),
                .pause(ActionPause(action: "backup", by: "bob", reason: "disk full", at: Self.at)),
            ]).get()
        }
        let store = try Store(path: path)
        defer { store.close() }
        let pauses = try await store.recoverableState().pauses
        #expect(pauses.map(\.action) == ["backup", "deploy"] && pauses.map(\.hold) == [false, true])
    }

    @Test("a run's origin, written in its creation's item, comes back with it unfinished; a run without one has none")
    func origin() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let run = { (id: Int64) in
            (RunSnapshot(id: id, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: Self.at),
             Transition(runID: id, seq: 1, from: nil, to: .queued, at: Self.at, detail: TransitionDetail()))
        }
        do {
            let store = try Store(path: path)
            defer { store.close() }
            try await store.commit([.created(run(1).0, run(1).1), .origin(runID: 1, uid: 1_234), .created(run(2).0, run(2).1)]).get()
        }
        let store = try Store(path: path)
        defer { store.close() }
        let unfinished = try await store.recoverableState().unfinished
        #expect(unfinished.map(\.run.id) == [1, 2] && unfinished.map(\.origin) == [1_234, nil])
    }
}
