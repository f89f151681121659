import BatonCore
@testable import BatonService
import Testing

/// `show` of a run with needs lists only the related runs of actions the caller may read.
@Suite("Service: needs in show")
struct NeedsShowTests {
    @Test("show lists the needs and neededBy runs of actions the caller may read; root sees them all")
    func filtered() async throws {
        let fixture = Fixture()
        var run = RunSnapshot(id: 8, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(microseconds: 0))
        run.needs = [NeededRun(action: "secret", run: 7, phase: .success), NeededRun(action: "hold", run: 9, phase: .loading)]
        run.neededBy = [NeededRun(action: "secret", run: 10, phase: .queued)]
        fixture.history.details.withLock {
            $0[8] = RunDetail(run: run, transitions: [], triggers: [], output: nil, outputTruncated: false)
        }
        let alice = try #require(await fixture.ask(#"{"op":"show","run":8}"#, as: Recorder(uid: Fixture.alice, gid: nil)))
        #expect(alice.detail?.run.needs?.map(\.text) == ["hold run 9"] && alice.detail?.run.neededBy == [], "\(String(describing: alice.detail?.run))")
        let root = try #require(await fixture.ask(#"{"op":"show","run":8}"#, as: Recorder(uid: 0, gid: nil)))
        #expect(root.detail?.run.needs?.count == 2 && root.detail?.run.neededBy?.count == 1)
    }
}
