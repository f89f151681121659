import BatonCore
import BatonFleet
import Foundation
import Testing

/// A fleet run's process group rides with the host's next write, but not for ever: a silent run's
/// is written alone within a second (`FleetWriter.rideAtMost`), so that a batond killed while the
/// run goes on is followed by one that takes the run back (review s36 M1: it waited for the run's end).
@Suite("End to end: a silent fleet run's leader reaches the rows without another write", .serialized, .offPool)
struct FleetRidingTests {
    /// `silent` writes nothing, waits at `gate` and exits 7.
    static func config(_ conninfo: String, gate: FifoGate) -> String {
        """
        { postgres: "\(conninfo)", host: "web-1", lease: "20s", requireUser: false,
          actions: { silent: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null; exit 7"], env: { GATE: "\(gate.path)" } } } }
        """
    }

    @Test("a run that writes nothing has its process group in the fleet's rows within seconds though the host writes nothing else; killed then, the host back in place takes the run back and records its true end")
    func silentRunTakenBack() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: Self.config(conninfo, gate: gate))
        try a.waitForLog("joined the fleet")
        let id = try #require(try FleetTests.trigger(a, "silent").run?.id)
        let fd = gate.opened()
        let db = try PGConnection(conninfo)
        // Nothing else is written meanwhile: no output, no other run.
        try Eventually.until("run \(id)'s process group written: \(a.stderr.suffix(2_000))", within: 15) {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND pgid IS NOT NULL", [String(id)]).first != nil
        }
        a.crash()
        let back = try Daemon(config: Self.config(conninfo, gate: gate), reusing: a)
        defer { back.stop() }
        try back.waitForLog("joined the fleet")
        #expect(back.stderr.contains("took back 1 runs"), "\(back.stderr)")
        gate.release(fd)
        let ended = try #require(try FleetTests.wait(back, run: id))
        #expect(ended.phase == .failure && ended.exitCode == 7 && ended.reason == "exit", "\(ended)\n\(back.stderr)")
    }
}
