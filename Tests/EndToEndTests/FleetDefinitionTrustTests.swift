import BatonCore
import BatonFleet
import Foundation
import Testing

/// The database never chooses what a host runs (docs/security.md): a stored definition gives a run only
/// what a database writer may decide; its process comes from a definition the host loaded from its own
/// config. What the review of fleetdefs14 showed a writer of the `definitions` table could do, refused.
@Suite("End to end: a fleet host runs no definition its config never gave", .serialized, .offPool)
struct FleetDefinitionTrustTests {
    typealias Defs = FleetRunDefinitionTests

    /// A run of `ship` queued behind a gated one on web-1 (exec A); `tamper` changes its stored row; web-1 then
    /// reloads `reloaded` and the gate opens: the queued run's end, and what the marker says.
    static func queuedAfterTamper(_ tamper: String, reloaded: (String, FifoGate, String) -> String) throws -> (RunSnapshot?, [String], Daemon) {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: Defs.config(conninfo, host: "web-1", lease: "15s", word: "A", gate: gate, marker: marker))
        try a.waitForLog("joined the fleet")
        let (first, queued, fd) = try Defs.queueBehindGate(a, gate)
        let db = try PGConnection(conninfo)
        #expect(try db.query(tamper.replacingOccurrences(of: "MARKER", with: marker)).affected == 1)
        try reloaded(conninfo, gate, marker).write(toFile: a.configPath, atomically: true, encoding: .utf8)
        #expect(try a.baton("reload").code == 0)
        gate.release(fd)
        #expect(try FleetTests.wait(a, run: first)?.phase == .success)
        return (try FleetTests.wait(a, run: queued), Defs.lines(marker), a)
    }

    @Test("a database writer's UPDATE of a revisions row (exec, as root) runs nothing: the queued run ends failure, reason definition; also where the host's config keeps the action's fingerprint and changes only what it leaves out (review s35 revisions M1)",
          arguments: [false, true])
    func databaseWriterRunsNothing(fingerprintKept: Bool) throws {
        let (ended, marker, a) = try Self.queuedAfterTamper("UPDATE revisions SET action = replace(action, 'echo A', 'id -u >> MARKER; echo PWNED')") { conninfo, gate, marker in
            fingerprintKept ? Defs.config(conninfo, host: "web-1", lease: "15s", word: "A", gate: gate, marker: marker, extra: #"output: { keep: "1MiB" }"#)
                : #"{ postgres: "\#(conninfo)", host: "web-1", lease: "15s", requireUser: false, actions: { other: { exec: ["true"] } } }"#
        }
        defer { a.stop() }
        #expect(ended?.phase == .failure && ended?.reason == "definition", "\(String(describing: ended))")
        #expect(ended?.error?.contains("not one web-1 configured") == true, "\(String(describing: ended?.error))")
        #expect(marker == ["A"], "the host ran a command written in the database")
        try a.waitForLog("is not one this host configured")
    }

    @Test("a run whose revisions row a database writer deleted is not run as the reloaded config's B: the run ends failure, reason definition (review s35 revisions L4)")
    func deletedRowRunsNothing() throws {
        let (ended, marker, a) = try Self.queuedAfterTamper("DELETE FROM revisions") { conninfo, gate, marker in
            Defs.config(conninfo, host: "web-1", lease: "15s", word: "B", gate: gate, marker: marker)
        }
        defer { a.stop() }
        #expect(ended?.phase == .failure && ended?.reason == "definition", "\(String(describing: ended))")
        #expect(ended?.error?.contains("is missing from the database") == true, "\(String(describing: ended?.error))")
        #expect(marker == ["A"], "the queued run ran the reloaded config's B")
    }

    @Test("a stored row of a newer codec (v2) is not run as the reloaded config's B: the run ends failure, reason definition")
    func unreadableRowRunsNothing() throws {
        let (ended, marker, a) = try Self.queuedAfterTamper(#"UPDATE revisions SET action = replace(action, '{"v":1,', '{"v":2,')"#) { conninfo, gate, marker in
            Defs.config(conninfo, host: "web-1", lease: "15s", word: "B", gate: gate, marker: marker)
        }
        defer { a.stop() }
        #expect(ended?.phase == .failure && ended?.reason == "definition", "\(String(describing: ended))")
        #expect(ended?.error?.contains("needs a newer batond") == true, "\(String(describing: ended?.error))")
        #expect(marker == ["A"], "the queued run ran the reloaded config's B")
    }

    @Test("a run waiting for root's approval whose action a reload removes is not waived: it still waits, and runs its own definition once root approves")
    func removedActionWaitsForApproval() throws {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: """
            { postgres: "\(conninfo)", host: "web-1", lease: "15s", requireUser: false, actions: {
                deploy: { exec: ["sh", "-c", "echo ran >> \(marker)"], approve: { by: ["user:root"], self: true, timeout: "1h" } } } }
            """)
        try a.waitForLog("joined the fleet")
        defer { a.stop() }
        let run = try #require(try FleetTests.trigger(a, "deploy").run?.id)
        try #"{ postgres: "\#(conninfo)", host: "web-1", lease: "15s", requireUser: false, actions: { other: { exec: ["true"] } } }"#
            .write(toFile: a.configPath, atomically: true, encoding: .utf8)
        #expect(try a.baton("reload").code == 0)
        // The waiver's look is once a second: three of them find nothing to waive (no event says "not waived").
        let db = try PGConnection(conninfo)
        let waived = try Eventually.held(within: 3) {
            try db.query("SELECT 1 FROM approvals WHERE run_id = $1 AND verdict IS NOT NULL", [String(run)]).first != nil
        }
        #expect(!waived, "the removed action's wait was waived")
        #expect(Defs.lines(marker).isEmpty, "a run that needed root's approval ran unapproved")
        let waiting = try db.query("SELECT phase FROM runs WHERE id = $1", [String(run)]).first
        #expect(waiting == ["queued"], "it still waits for root's approval")
        // Root triggered it and may approve it (`self: true`; without it the approve is refused, 77, and the run waits on).
        let yes = try execute(Binaries.baton, ["--socket", a.socket, "approve", String(run)], within: 30)
        #expect(yes.code == 0, "\(yes.stderr)")
        #expect(try FleetTests.wait(a, run: run, within: 60)?.phase == .success, "a queued run of a removed action finishes, as on one machine")
        #expect(Defs.lines(marker) == ["ran"])
    }
}
