import BatonCore
@testable import BatonStore
import Testing

/// `History.transitions(after:action:limit:)`: what a watch that watches again is sent first.
@Suite("Watch replay in the SQLite history")
struct WatchReplayStoreTests {
    /// Runs 1 and 3 of `a`, 2 of `b`: each queued, loading, success, with transitions of
    /// different runs at the same microsecond, committed out of time order across runs.
    static func history(_ store: Store) async throws {
        func run(_ id: Int64, _ action: String, at times: [Int64]) -> [JournalEntry] {
            let queued = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:], trigger: nil,
                                     queuedAt: Timestamp(rawValue: times[0]))
            return [.created(queued, Transition(runID: id, seq: 1, from: nil, to: .queued, at: queued.queuedAt)),
                    .transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: Timestamp(rawValue: times[1]), detail: TransitionDetail(attempt: 1))),
                    .transition(Transition(runID: id, seq: 3, from: .loading, to: .success, at: Timestamp(rawValue: times[2]),
                                           detail: TransitionDetail(reason: "exit", exitCode: 0)))]
        }
        try await store.commit(run(1, "a", at: [100, 200, 300])).get()
        try await store.commit(run(2, "b", at: [200, 250, 400])).get()
        try await store.commit(run(3, "a", at: [150, 300, 500])).get()
    }

    static func keys(_ replay: Replay) -> [String] {
        replay.updates.map { "\($0.run.id).\($0.transition!.seq)@\($0.transition!.at.rawValue)" }
    }

    @Test("after a cursor: every later transition, once, by time then run then sequence, each with its run as it is now")
    func after() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.history(store)
        // The cursor is run 1's loading at 200: run 2's queued at 200 comes after it (run 2 > run 1).
        let replay = try await store.transitions(after: WatchCursor(at: Timestamp(rawValue: 200), run: 1, seq: 2), action: nil, limit: 100)
        #expect(Self.keys(replay) == ["2.1@200", "2.2@250", "1.3@300", "3.2@300", "2.3@400", "3.3@500"])
        #expect(replay.skipped == 0)
        #expect(replay.updates.allSatisfy { $0.run.phase == .success })
        #expect(replay.updates.first?.run.action == "b")
        // Of one action only.
        let onlyA = try await store.transitions(after: WatchCursor(at: Timestamp(rawValue: 200), run: 1, seq: 2), action: "a", limit: 100)
        #expect(Self.keys(onlyA) == ["1.3@300", "3.2@300", "3.3@500"])
        // From before everything (a first watch's start), and after the last: nothing.
        #expect(try await store.transitions(after: WatchCursor(at: Timestamp(rawValue: 0), run: 0, seq: 0), action: nil, limit: 100).updates.count == 9)
        #expect(try await store.transitions(after: WatchCursor(at: Timestamp(rawValue: 500), run: 3, seq: 3), action: nil, limit: 100).updates.isEmpty)
    }

    @Test("past the bound: the newest, oldest first, and how many older ones were left out")
    func bounded() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.history(store)
        let cursor = WatchCursor(at: Timestamp(rawValue: 100), run: 1, seq: 1)
        let replay = try await store.transitions(after: cursor, action: nil, limit: 3)
        #expect(Self.keys(replay) == ["3.2@300", "2.3@400", "3.3@500"])
        #expect(replay.skipped == 5)
        let onlyA = try await store.transitions(after: cursor, action: "a", limit: 2)
        #expect(Self.keys(onlyA) == ["3.2@300", "3.3@500"])
        #expect(onlyA.skipped == 3)
        // Exactly the bound: nothing left out.
        #expect(try await store.transitions(after: cursor, action: nil, limit: 8).skipped == 0)
    }

    @Test("the query reads transitions_by_time, not the whole table")
    func plan() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        try await Self.history(store)
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        var lines: [String] = []
        try connection.withStatement("EXPLAIN QUERY PLAN " + History.replaySQL(History.replayAfter, limit: 10)) { s in
            try s.bind([.integer(0), .integer(0), .integer(0)])
            while try s.step() { lines.append(s.string(3) ?? "") }
        }
        #expect(lines.contains { $0.contains("transitions_by_time") }, "\(lines)")
        #expect(!lines.contains { $0.contains("TEMP B-TREE") }, "\(lines)")
    }
}
