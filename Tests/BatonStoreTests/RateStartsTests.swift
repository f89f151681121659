import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// What a rate limit's window is seeded from at start: the runs that first went loading inside
/// it, by their start, whenever they were queued, over every key.
@Suite("Rate starts in the store")
struct RateStartsTests {
    static let base = Timestamp(rawValue: 1_800_000_000_000_000)

    /// A run of `action` (key `key`) queued at `queued` seconds, started at `started` (none: never).
    static func entries(_ id: Int64, action: String = "deploy", key: String, queued: Int64, started: Int64?) -> [JournalEntry] {
        let at = { (second: Int64) in base + .seconds(second) }
        let run = RunSnapshot(id: id, action: action, key: key, phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: at(queued))
        var list: [JournalEntry] = [.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at(queued), detail: .init()))]
        if let started {
            list.append(.transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: at(started), detail: .init(attempt: 1))))
        }
        return list
    }

    @Test("started(since:): by start time, not queue time or count; other actions and unstarted runs left out")
    func startedSince() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        var entries: [JournalEntry] = []
        entries += Self.entries(1, key: "deploy a", queued: 0, started: 10)       // before the window
        entries += Self.entries(2, key: "deploy b", queued: 5, started: 3_700)    // queued long before, started inside
        entries += Self.entries(3, key: "deploy c", queued: 3_650, started: nil)  // never started
        entries += Self.entries(4, action: "backup", key: "backup", queued: 3_700, started: 3_710)
        entries += Self.entries(5, key: "deploy a", queued: 3_720, started: 3_720)
        try await store.commit(entries).get()
        let found = try await store.started("deploy", since: Self.base + .seconds(3_600))
        #expect(found.map(\.id) == [5, 2])
    }
}
