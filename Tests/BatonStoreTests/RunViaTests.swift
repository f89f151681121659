import BatonCore
@testable import BatonStore
import Testing

/// Where a run's trigger came from, on the run's row: migration 6 and the writer.
@Suite("Run via in the history")
struct RunViaTests {
    static let via = "webhook gh from 203.0.113.7, delivery 72d3"

    @Test("a run created with a via reads back with it, alone and in the history; a socket trigger's has none")
    func roundTrip() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        var hooked = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                 queuedAt: Timestamp(rawValue: 10))
        hooked.via = Self.via
        var detail = TransitionDetail()
        detail.via = Self.via
        try await store.commit([.created(hooked, Transition(runID: 1, seq: 1, from: nil, to: .queued, at: hooked.queuedAt, detail: detail))]).get()
        let pressed = RunSnapshot(id: 2, action: "a", key: "a", phase: .queued, policy: .reject, params: [:],
                                  trigger: Peer(uid: 1000, gid: 1000, pid: 7), queuedAt: Timestamp(rawValue: 11))
        try await store.commit([.created(pressed, Transition(runID: 2, seq: 1, from: nil, to: .queued, at: pressed.queuedAt))]).get()
        let stored = try #require(try await store.read { try $0.run(1) })
        #expect(stored.run.via == Self.via)
        #expect(stored.transitions.first?.detail.via == Self.via)
        let runs = try await store.read { try $0.runs(HistoryFilter()) }
        #expect(runs.map(\.via) == [nil, Self.via])
    }

    @Test("a version-5 history migrates to version 6 and on: its runs read as before, with no via")
    func migration() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try OldHistory.make(at: path, version: 5) { try $0.execute(OldHistory.endedRun) }
        let store = try Store(path: path)
        store.close()
        let connection = try Connection(path: path, readOnly: true)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        #expect(try connection.scalar("SELECT name FROM schema_migrations WHERE version = 6")?.string == "run_via")
        let run = try #require(try History(connection: connection).run(1)).run
        #expect(run.phase == .success && run.exitCode == 0 && run.via == nil)
    }
}
