import BatonCore
@testable import BatonStore
import Testing

/// A line of follow-ups (`queue: { depth: N }`) survives a crash in order: the conductor's
/// writes go to a real SQLite file, the daemon "dies" with its holder loading and three
/// follow-ups queued, and a new conductor recovers from what the file says.
@Suite("A key's line across a crash")
struct LineRecoveryTests {
    static let deploy: Action = {
        var action = Action(name: "deploy", exec: ["true"], policy: .queue, params: ["ref": ParamSpec()])
        action.queueDepth = 3
        return action
    }()

    /// One conductor and the file it writes: every write is committed before the next event.
    struct Rig {
        var state = ConductorState(maxConcurrentRuns: 4)
        let store: Store
        var now = Timestamp(rawValue: 1_000_000)
        var launched: [Int64] = []
        var answers: [ConductorState.Token: ConductorState.Answer] = [:]

        mutating func handle(_ event: ConductorState.Event) async throws {
            var events = [event]
            while !events.isEmpty {
                let effects = state.handle(events.removeFirst(), at: now)
                now = now + .milliseconds(1)
                for effect in effects {
                    switch effect {
                    case let .write(entries, id):
                        try await store.commit(entries).get()
                        events.append(.committed(id, nil))
                    case let .launch(launch): launched.append(launch.run)
                    case let .answer(token, answer): answers[token] = answer
                    default: break
                    }
                }
            }
        }

        mutating func trigger(_ token: ConductorState.Token, ref: String) async throws -> ConductorState.Answer? {
            let params = ["ref": ref]
            try await handle(.trigger(token, Trigger(action: LineRecoveryTests.deploy, key: LineRecoveryTests.deploy.key(for: params),
                                                      policy: .queue, params: params, peer: nil)))
            return answers[token]
        }
    }

    @Test("recovery rebuilds the line in its order from the history; its runs then start first in first out")
    func lineSurvivesACrash() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            var rig = Rig(store: try Store(path: path))
            defer { rig.store.close() }
            for (token, ref) in ["a", "b", "c", "d"].enumerated() { _ = try await rig.trigger(UInt64(token + 1), ref: ref) }
            guard case let .failed(error) = try await rig.trigger(9, ref: "e") else { Issue.record("a fifth trigger was not refused"); return }
            guard case let .busy(run, _, _, _, line) = error else { Issue.record("refused \(error), not busy"); return }
            #expect(run == 1 && line == 3)
            #expect(error.message(at: rig.now).contains("its line is full: 3 runs wait"))
            #expect(rig.launched == [1])
        }
        let store = try Store(path: path)
        defer { store.close() }
        let recoverable = try await store.recoverableState()
        #expect(recoverable.unfinished.map(\.run.id) == [1, 2, 3, 4])
        var rig = Rig(store: store)
        try await rig.handle(.recover(1, recoverable.unfinished.map { RecoveredRun($0, action: Self.deploy) }))
        guard case let .recovered(summary) = rig.answers[1] else { Issue.record("recovery not answered"); return }
        #expect(summary.interrupted == [1] && summary.requeued == [2, 3, 4] && summary.dropped == [])
        for expected in Int64(2)...4 {
            #expect(rig.launched.last == expected)
            try await rig.handle(.exited(run: expected, attempt: 1, AttemptOutcome(result: .exited(status: 0))))
        }
        #expect(rig.launched == [2, 3, 4])
        let last = try #require(try await store.read { try $0.run(4) })
        #expect(last.run.phase == .success)
    }

    @Test("recovery under a shallower line keeps what fits and cancels the rest as superseded")
    func shallowerAfterReload() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            var rig = Rig(store: try Store(path: path))
            defer { rig.store.close() }
            for (token, ref) in ["a", "b", "c", "d"].enumerated() { _ = try await rig.trigger(UInt64(token + 1), ref: ref) }
        }
        let store = try Store(path: path)
        defer { store.close() }
        var shallow = Self.deploy
        shallow.queueDepth = 1
        var rig = Rig(store: store)
        try await rig.handle(.recover(1, try await store.recoverableState().unfinished.map { RecoveredRun($0, action: shallow) }))
        guard case let .recovered(summary) = rig.answers[1] else { Issue.record("recovery not answered"); return }
        #expect(summary.requeued == [2, 3] && summary.dropped == [4])
        #expect(try await store.read { try $0.run(4) }?.run.reason == "superseded")
    }
}
