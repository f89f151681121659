import BatonStore
import Foundation
import Testing

/// Review of spawn3 (review-spawn3.md R1, R2): promises of "a run outlives batond" that the move of
/// the shims' directories under $RUNTIME_DIRECTORY (920c8c9) broke, and that its safe form keeps
/// (written by the reviewer in 01400a8; here the status is looked for in either place).
@Suite("Review spawn3: shims under the runtime directory", .serialized, .offPool)
struct ShimPlaceReviewTests {
    @Test("R2: the service hands a run over (RUNTIME_DIRECTORY set); a batond started without the variable adopts it")
    func withoutRuntimeDirectoryAdopts() throws {
        let scratch = ScratchDirectory("shimreview")
        defer { withExtendedLifetime(scratch) {} }
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.stop() // hands the run over to its shim
        let again = try Daemon(config: config, reusing: daemon) // by hand: no RUNTIME_DIRECTORY
        #expect(again.stderr.contains("1 adopted"), "\(again.stderr)")
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        _ = try again.baton("wait", "1")
        let phase = try ShimPlaceEndToEndTests.phase(connection, run: 1)
        #expect(phase == ["failure 3 exit"], "R2 phase: \(phase)")
        again.stop()
    }

    @Test("R1: a run that ended while no batond ran keeps its outcome across a reboot (the runtime directory emptied)")
    func endedRunSurvivesReboot() throws { try Self.endedRun(runtimeDirectory: true) }

    @Test("R1 baseline: the same without RUNTIME_DIRECTORY (the shims beside the database, as before spawn3)")
    func endedRunBaseline() throws { try Self.endedRun(runtimeDirectory: false) }

    static func endedRun(runtimeDirectory: Bool) throws {
        let scratch = ScratchDirectory("shimreview")
        defer { withExtendedLifetime(scratch) {} }
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let config = SurviveTests.config(scratch.path)
        let environment = runtimeDirectory ? ["RUNTIME_DIRECTORY": runtime] : [:]
        let daemon = try Daemon(config: config, environment: environment)
        let shims = try ShimPlaceEndToEndTests.shims(daemon)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.stop() // planned stop: handed over
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil) // the run ends, exit 3, while no batond runs
        let statuses = [shims + "/1-1/status", daemon.database + "-shims/1-1/status"]
        guard Eventually.until("run 1's shim wrote its status", { statuses.contains { FileManager.default.fileExists(atPath: $0) } }) else { return }
        // The reboot: /run emptied.
        try FileManager.default.removeItem(atPath: runtime)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let again = try Daemon(config: config, reusing: daemon, environment: environment)
        _ = try again.baton("wait", "1")
        let phase = try ShimPlaceEndToEndTests.phase(connection, run: 1)
        #expect(phase == ["failure 3 exit"], "R1 phase (runtime directory: \(runtimeDirectory)): \(phase)")
        again.stop()
    }
}
