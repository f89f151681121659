import BatonClient
import BatonCore
import Foundation
import Testing

/// `BatonClient` hands a Swift program what a run needs and what needs it (needs, issue 40 item 2).
@Suite("End to end: needs through BatonClient", .offPool)
struct NeedsClientTests {
    @Test("show gives a run's needs and a needed run's neededBy, each with its phase")
    func show() async throws {
        let daemon = try Daemon(config: """
            { requireUser: false, actions: { a: { exec: ["true"] }, b: { exec: ["false"] }, c: { exec: ["true"], needs: ["a", "b"] } } }
            """)
        let client = try BatonClient(socket: daemon.socket)
        defer { client.close() }
        #expect(try daemon.baton("run", "c").code != 0)
        // c ends as soon as b failed: a may still be running then.
        #expect(try PolicyTests.waitFor(daemon, run: 2)?.phase == .success)
        let c = try await client.show(1)
        #expect(c.run.phase == .failure && c.run.error == "needs b: run 3 failed", "\(c.run)")
        #expect(c.run.needs?.map(\.text) == ["a run 2", "b run 3"] && c.run.needs?.map(\.phase) == [.success, .failure])
        let b = try await client.show(3)
        #expect(b.run.neededBy == [NeededRun(action: "c", run: 1, phase: .failure, reason: "needs")])
    }
}
