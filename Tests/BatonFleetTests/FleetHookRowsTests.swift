import BatonCore
@testable import BatonFleet
import Testing

/// What the writer's end transaction reads and locks for hooks, and how a hook run's row says
/// what made it.
@Suite("FleetHooks: the keys a firing locks, and a hook run's row")
struct FleetHookRowsTests {
    static func action(_ name: String) -> Action { Action(name: name, exec: ["true"]) }

    @Test("the hook keys of a batch's firings, each once, in key order (the order the writer inserts and locks them); none without a firing")
    func keys() throws {
        var hooks = HookTargets()
        hooks.targets[.failure] = HookTarget(action: Self.action("page"), params: [:])
        hooks.targets[.change] = HookTarget(action: Self.action("flip"), params: [:])
        hooks.targets[.success] = HookTarget(action: Self.action("page"), params: [:])
        let run = RunSnapshot(id: 7, action: "deploy", key: "deploy", phase: .failure, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        let firing = try #require(HookFiring(run: run, hooks: hooks))
        let end = JournalEntry.transition(Transition(runID: 7, seq: 3, from: .loading, to: .failure, at: Timestamp(rawValue: 2)))
        #expect(FleetHooks.keys([end, .hooks(firing), .hooks(firing)]) == ["flip", "page"])
        #expect(FleetHooks.keys([end]).isEmpty)
        #expect(Set(FleetJournal.keyed([end, .hooks(firing)]).keys) == ["flip", "page"], "the hook keys are locked with the run's")
        #expect(FleetHooks.insertKeys(["flip", "page"]).parameters == [#"{"flip","page"}"#])
    }

    @Test("a hook run's row carries what made it; any other run's row carries nothing")
    func hookColumns() {
        var row = [String?](repeating: nil, count: FleetRows.runColumnCount)
        row[0] = "9"
        row[3] = "queued"
        #expect(FleetRows.run(row).hook == nil)
        (row[23], row[24], row[25]) = ("7", "deploy", "failure")
        #expect(FleetRows.run(row).hook == HookCause(run: 7, action: "deploy", event: .failure))
        row[25] = "bogus"
        #expect(FleetRows.run(row).hook == nil, "an unknown event is not a cause")
    }
}
