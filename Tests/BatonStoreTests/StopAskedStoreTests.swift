import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Schema 18 in a real SQLite history: a stop asked of a running run (`JournalEntry.stopAsked`)
/// is its row's `stop`, and comes back with the unfinished run after a restart.
@Suite("Stops asked of running runs in the store")
struct StopAskedStoreTests {
    static let at = Timestamp(rawValue: 1_800_000_000_000_000)

    static func created(_ id: Int64) -> JournalEntry {
        .created(RunSnapshot(id: id, action: "deploy", key: "deploy-\(id)", phase: .queued, policy: .reject, params: [:], trigger: nil,
                             queuedAt: Self.at),
                 Transition(runID: id, seq: 1, from: nil, to: .queued, at: Self.at, detail: TransitionDetail()))
    }

    static func moved(_ id: Int64, seq: Int, _ from: Phase, _ to: Phase) -> JournalEntry {
        .transition(Transition(runID: id, seq: seq, from: from, to: to, at: Self.at, detail: TransitionDetail(attempt: 1)))
    }

    @Test("written alone or in the item that creates and starts the run, it comes back; asked after the run's end, it changes nothing")
    func comesBack() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let group = RunMachine.Stop.cancelled(by: Peer.groupPrincipalUID, principal: "carol@example.org via group:ops")
        do {
            let store = try Store(path: path)
            defer { store.close() }
            try await store.commit([Self.created(1), Self.moved(1, seq: 2, .queued, .loading)]).get()
            try await store.commit([.stopAsked(runID: 1, .cancelled(by: 42))]).get()
            // Created, started and stopped in one group: the run's row is held to the group's end.
            try await store.commit([Self.created(2), Self.moved(2, seq: 2, .queued, .loading), .stopAsked(runID: 2, group)]).get()
            try await store.commit([Self.created(3), Self.moved(3, seq: 2, .queued, .loading), Self.created(4),
                                    Self.moved(4, seq: 2, .queued, .loading)]).get()
            try await store.commit([Self.moved(3, seq: 3, .loading, .success), .stopAsked(runID: 3, .replaced(by: 9))]).get()
        }
        let store = try Store(path: path)
        defer { store.close() }
        let unfinished = try await store.recoverableState().unfinished
        #expect(unfinished.map(\.run.id) == [1, 2, 4])
        #expect(unfinished.map(\.stop) == [.cancelled(by: 42), group, nil])
        let connection = try Connection(path: path, readOnly: true)
        let ended = try connection.withStatement("SELECT coalesce(stop, 'none') FROM runs WHERE id = 3") { statement in
            try statement.step() ? statement.string(0) : nil
        }
        #expect(ended == "none", "a stop asked after the run's end is not written")
    }
}
