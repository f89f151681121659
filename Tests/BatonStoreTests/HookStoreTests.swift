import BatonCore
import Dispatch
@testable import BatonStore
import Testing

/// A hook's trigger is durable with the outcome that fired it: the end and the hook run's
/// creation are one item, one transaction (migration 8 and the writer).
@Suite("Hooks in the history", .offPool)
struct HookStoreTests {
    static let at = Timestamp(rawValue: 1_000)

    static func run(_ id: Int64, _ action: String, phase: Phase = .queued) -> RunSnapshot {
        RunSnapshot(id: id, action: action, key: action, phase: phase, policy: .queue, params: ["env": "prod"], trigger: nil, queuedAt: at)
    }

    static func hookRun(_ id: Int64, of firing: Int64) -> RunSnapshot {
        var hook = run(id, "page")
        hook.params = [:]
        hook.hook = HookCause(run: firing, action: "deploy", event: .failure)
        hook.via = hook.hook?.description
        return hook
    }

    /// Run 1 of deploy, loading; run 2 of page, queued (so that a second creation of it fails).
    static func loading(_ store: Store) async throws {
        try await store.commit([.created(run(1, "deploy"), Transition(runID: 1, seq: 1, from: nil, to: .queued, at: at)),
                                .transition(Transition(runID: 1, seq: 2, from: .queued, to: .loading, at: at,
                                                       detail: TransitionDetail(attempt: 1)))]).get()
        try await store.commit([.created(run(2, "page"), Transition(runID: 2, seq: 1, from: nil, to: .queued, at: at))]).get()
    }

    static func end(_ hook: RunSnapshot) -> [JournalEntry] {
        var queued = TransitionDetail()
        queued.via = hook.via
        return [.output(runID: 1, tail: Array("step 3 failed\n".utf8), truncated: false),
                .transition(Transition(runID: 1, seq: 3, from: .loading, to: .failure, at: at + .seconds(1),
                                detail: TransitionDetail(reason: "exit", exitCode: 2, error: "exited with status 2"))),
                .created(hook, Transition(runID: hook.id, seq: 1, from: nil, to: .queued, at: at + .seconds(1),
                                   detail: queued))]
    }

    @Test("an end whose hook run cannot be written is not written either: one transaction, nothing half done")
    func oneTransaction() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        try await Self.loading(store)
        // Run 2 exists already: the hook run's insert fails, and with it the item.
        let refused = await store.commit(Self.end(Self.hookRun(2, of: 1)))
        #expect(throws: BatonError.self) { try refused.get() }
        let after = try #require(try await store.read { try $0.run(1) })
        #expect(after.run.phase == .loading && after.transitions.count == 2 && after.output == nil)
        #expect(try await store.read { try $0.run(2) }?.run.hook == nil)
    }

    @Test("an end and its hook run commit together; show lists the hook both ways; recovery tells the queued hook run what fired it")
    func bothWays() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        do {
            let store = try Store(path: path)
            defer { store.close() }
            try await Self.loading(store)
            try await store.commit(Self.end(Self.hookRun(3, of: 1))).get()
        }
        let store = try Store(path: path)
        defer { store.close() }
        let firing = try #require(try await store.read { try $0.run(1) })
        #expect(firing.run.phase == .failure && firing.hookRuns?.map(\.id) == [3])
        let hook = try #require(try await store.read { try $0.run(3) })
        #expect(hook.run.hook == HookCause(run: 1, action: "deploy", event: .failure))
        #expect(hook.run.via == "the failure hook of deploy run 1" && hook.hookRuns == [])
        let recoverable = try await store.recoverableState()
        let queued = try #require(recoverable.unfinished.first { $0.run.id == 3 })
        let told = try #require(queued.hook)
        #expect(told.cause == hook.run.hook && told.output == Array("step 3 failed\n".utf8))
        #expect(told.environment["BATON_HOOK_EXIT_CODE"] == "2" && told.environment["BATON_HOOK_ERROR"] == "exited with status 2")
        #expect(told.environment["BATON_HOOK_PARAM_ENV"] == "prod" && told.environment["BATON_HOOK_KEY"] == "deploy")
        #expect(recoverable.unfinished.first { $0.run.id == 2 }?.hook == nil)
    }

    @Test("an end with its hook runs is never refused: while writes back up, a trigger is refused and the end and its hook run are kept and written")
    func keptWhileBackedUp() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: Store.Options(maxBatch: 1, maxQueued: 2))
        try await Self.loading(store)
        let writer = StoreWriterTests.WriterGate()
        try writer.hold(store)
        #expect(writer.entered.wait(timeout: .usualWait) == .success)
        let filler = StoreWriterTests.Answer(store, [StoreWriterTests.created(20)])
        let second = StoreWriterTests.Answer(store, [StoreWriterTests.created(22)])
        let refused = StoreWriterTests.Answer(store, [StoreWriterTests.created(21)]).value
        guard case .failure(.storeUnavailable) = refused else { Issue.record("the trigger was not refused: \(String(describing: refused))"); return }
        let end = StoreWriterTests.Answer(store, Self.end(Self.hookRun(3, of: 1)))
        writer.open()
        #expect(filler.value?.isSuccess == true && second.value?.isSuccess == true && end.value?.isSuccess == true)
        #expect(try await store.read { try $0.run(1) }?.hookRuns?.map(\.id) == [3])
        store.close()
    }
}
