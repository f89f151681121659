import BatonFleet
import Foundation
import Testing

/// A fleet host's shims under a runtime directory: named after its database and its host
/// (`@HOST`), and what a crash and a stop leave there and on the disk.
@Suite("End to end: a fleet host's shims under the runtime directory", .serialized, .offPool)
struct FleetShimPlaceTests {
    @Test("a fleet host under $RUNTIME_DIRECTORY: its attempts' directories there, named with @HOST; killed, then stopped, and back: the run taken back each time, its end true, nothing left")
    func underRuntimeDirectory() throws {
        let scratch = try FleetRestartTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let runtime = scratch + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let conninfo = try Postgres.server().database()
        let config = FleetRestartTests.config(conninfo, host: "web-1", lease: "20s", scratch: scratch)
        let a = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        try a.waitForLog("joined the fleet")
        let shims = try ShimPlaceEndToEndTests.shims(a)
        #expect(shims.hasPrefix(runtime + "/shims-") && shims.hasSuffix("@web\\x2d1"), "\(shims)")
        let id = try #require(try FleetTests.trigger(a, "waiter").run?.id)
        FleetRestartTests.waitForStart(scratch, of: a)
        #expect(FileManager.default.fileExists(atPath: shims + "/\(id)-1"))
        let db = try PGConnection(conninfo)
        try Eventually.until("the run's process group and output written") {
            try db.query("""
                SELECT 1 FROM runs r JOIN output_totals o ON o.run_id = r.id WHERE r.id = $1 AND r.pgid IS NOT NULL AND o.total >= 7
                """, [String(id)]).first != nil
        }
        a.crash()
        let back = try Daemon(config: config, reusing: a, environment: ["RUNTIME_DIRECTORY": runtime])
        try back.waitForLog("joined the fleet")
        #expect(back.stderr.contains("took back 1 runs"), "\(back.stderr)")
        // A stop hands the adopted run over again: told so, its shim makes its directory on the disk (the host's place).
        back.stop()
        Eventually.until("the shim's directory on the disk") { FileManager.default.fileExists(atPath: back.database + "-shims-web-1/\(id)-1") }
        let third = try Daemon(config: config, reusing: back, name: "third", environment: ["RUNTIME_DIRECTORY": runtime])
        try third.waitForLog("joined the fleet")
        defer { third.stop() }
        #expect(third.stderr.contains("took back 1 runs"), "\(third.stderr)")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(third, run: id))
        #expect(ended.phase == .failure && ended.exitCode == 7 && ended.reason == "exit", "\(ended)\n\(third.stderr)")
        #expect(try third.baton("logs", String(id)).stdout == "before\nafter\n")
        #expect(!FileManager.default.fileExists(atPath: shims + "/\(id)-1"))
        #expect(!FileManager.default.fileExists(atPath: back.database + "-shims-web-1"))
    }
}
