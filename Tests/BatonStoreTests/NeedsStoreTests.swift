import BatonCore
@testable import BatonStore
import Testing

/// Needs across a crash (issue 40, item 2): the relation is written with the run to a real SQLite
/// file (`run_needs`, migration 12); a new conductor finds a waiting run still waiting on the same
/// runs, or decides it from how they ended meanwhile; `show` lists them both ways.
@Suite("Needs in the history")
struct NeedsStoreTests {
    typealias Rig = LineRecoveryTests.Rig

    static let a = Action(name: "a", exec: ["true"])
    static let b = Action(name: "b", exec: ["true"])
    static let c: Action = {
        var c = Action(name: "c", exec: ["true"])
        c.needs = [NeedTarget(action: a, params: [:]), NeedTarget(action: b, params: [:])]
        return c
    }()
    static let actions = ["a": a, "b": b, "c": c]

    static func trigger(_ rig: inout Rig, _ action: Action, token: UInt64) async throws {
        try await rig.handle(.trigger(token, Trigger(action: action, key: action.name, policy: action.policy, params: [:], peer: nil)))
    }

    static func recover(_ store: Store) async throws -> Rig {
        let recoverable = try await store.recoverableState()
        var rig = Rig(store: store)
        try await rig.handle(.recover(1, recoverable.unfinished.map { RecoveredRun($0, action: actions[$0.run.action]) }))
        return rig
    }

    @Test("a crash while c waits for a (running) and b (done): c waits again for the same runs; a is interrupted, so c ends failure naming it")
    func interruptedNeed() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            var rig = Rig(store: try Store(path: path))
            defer { rig.store.close() }
            try await Self.trigger(&rig, Self.c, token: 1)
            #expect(rig.launched == [2, 3])
            try await rig.handle(.exited(run: 3, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        }
        let store = try Store(path: path)
        defer { store.close() }
        let recoverable = try await store.recoverableState()
        let waiting = try #require(recoverable.unfinished.first { $0.run.id == 1 })
        #expect(waiting.needs == [NeededRun(action: "a", run: 2, phase: .loading), NeededRun(action: "b", run: 3, phase: .success, reason: "exit")])
        let rig = try await Self.recover(store)
        #expect(rig.launched.isEmpty)
        let c = try #require(try await store.read { try $0.run(1) })
        #expect(c.run.phase == .failure && c.run.error == "needs a: run 2 was interrupted")
        #expect(c.run.needs?.map(\.text) == ["a run 2", "b run 3"] && c.run.needs?.map(\.phase) == [.failure, .success])
        let a = try #require(try await store.read { try $0.run(2) })
        #expect(a.run.neededBy == [NeededRun(action: "c", run: 1, phase: .failure, reason: "needs")])
    }

    @Test("a crash while c waits for a and b, both queued behind another run: after the restart c still waits for the same runs, and starts once both succeeded")
    func waitsAgain() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let other = Action(name: "other", exec: ["true"])
        do {
            var rig = Rig(state: ConductorState(maxConcurrentRuns: 1), store: try Store(path: path))
            defer { rig.store.close() }
            try await Self.trigger(&rig, other, token: 1)
            try await Self.trigger(&rig, Self.c, token: 2)
            #expect(rig.launched == [1], "one slot: c (2), a (3) and b (4) wait queued")
        }
        let store = try Store(path: path)
        defer { store.close() }
        let recoverable = try await store.recoverableState()
        #expect(recoverable.unfinished.first { $0.run.id == 2 }?.needs?.map(\.run) == [3, 4])
        var rig = Rig(state: ConductorState(maxConcurrentRuns: 1), store: store)
        try await rig.handle(.recover(1, recoverable.unfinished.map { RecoveredRun($0, action: Self.actions[$0.run.action] ?? other) }))
        #expect(rig.launched == [3], "run 1 interrupted; a starts; c waits")
        #expect(rig.state.snapshot(of: 2)?.needs?.map(\.text) == ["a run 3", "b run 4"])
        try await rig.handle(.exited(run: 3, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        #expect(rig.launched == [3, 4])
        try await rig.handle(.exited(run: 4, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        #expect(rig.launched == [3, 4, 2])
        let b = try #require(try await store.read { try $0.run(4) })
        #expect(b.run.neededBy?.map(\.run) == [2])
    }

    @Test("retention keeps a needed run while the run that needs it is unfinished, so that a restart decides it from how it ended; once that run ended, it may go")
    func retentionKeepsNeeded() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let later = Timestamp.now + .seconds(100 * 86_400)
        let retention = Retention(maxAge: .seconds(30 * 86_400), keepFailures: .seconds(30 * 86_400), maxRunsPerAction: 100)
        do {
            var rig = Rig(store: try Store(path: path))
            defer { rig.store.close() }
            try await Self.trigger(&rig, Self.c, token: 1)
            try await rig.handle(.exited(run: 2, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
            #expect(rig.launched == [2, 3], "a (2) succeeded, b (3) runs, c (1) waits")
            let report = try await rig.store.prune(retention: retention, now: later)
            #expect(report.total == 0, "a's run 2 is needed by c, still queued")
        }
        let store = try Store(path: path)
        defer { store.close() }
        let waiting = try #require(try await store.recoverableState().unfinished.first { $0.run.id == 1 })
        #expect(waiting.needs?.map(\.phase) == [.success, .loading], "a's run is still in the history, as it ended")
        _ = try await Self.recover(store)
        let c = try #require(try await store.read { try $0.run(1) })
        #expect(c.run.error == "needs b: run 3 was interrupted", "decided from b, not from a gone")
        let after = try await store.prune(retention: retention, now: later)
        #expect(after.removed["a"] == 1, "c ended: a's run may go")
    }
}
