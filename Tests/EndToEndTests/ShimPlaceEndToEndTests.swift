import BatonStore
import Foundation
import Testing

/// The shims' directories under the runtime directory systemd gives batond (`$RUNTIME_DIRECTORY`,
/// /run/baton: a tmpfs kept across restarts, emptied by a reboot), and what each promise of
/// "a run outlives batond" becomes there.
@Suite("End to end: the shims' directory under the runtime directory", .serialized, .offPool)
struct ShimPlaceEndToEndTests {
    /// The shims' directory batond says it uses.
    static func shims(_ daemon: Daemon) throws -> String {
        let marker = "their shims' directories in "
        let line = try #require(daemon.stderr.split(separator: "\n").first { $0.contains(marker) }, "\(daemon.stderr)")
        return String(line[line.range(of: marker)!.upperBound...])
    }

    static func phase(_ connection: Connection, run: Int) throws -> [String] {
        try SurviveTests.column(connection, "SELECT phase || ' ' || coalesce(exit_code, '-') || ' ' || coalesce(reason, '-') FROM runs WHERE id = \(run)")
    }

    @Test("with $RUNTIME_DIRECTORY: the attempt's directory is there, named after the database, none beside the database; a crash's next batond adopts the run")
    func underRuntimeDirectory() throws {
        let scratch = ScratchDirectory("shimplace")
        defer { withExtendedLifetime(scratch) {} }
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        let shims = try Self.shims(daemon)
        #expect(shims.hasPrefix(runtime + "/shims-") && shims.hasSuffix("-history.sqlite"), "\(shims)")
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        Eventually.until("run 1's shim directory under the runtime directory") { FileManager.default.fileExists(atPath: shims + "/1-1") }
        #expect(!FileManager.default.fileExists(atPath: daemon.database + "-shims"))
        // Its leader recorded (with its first line) before the crash: else it is not known to be the run's.
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.crash()
        let again = try Daemon(config: config, reusing: daemon, environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(try Self.shims(again) == shims)
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        _ = try again.baton("wait", "1")
        #expect(try Self.phase(connection, run: 1) == ["failure 3 exit"])
        #expect(again.stderr.contains("1 adopted"), "\(again.stderr)")
        again.stop()
    }

    @Test("an upgrade: the runs a batond left beside the database are adopted by one that keeps its shims under the runtime directory")
    func upgradeFindsEarlierPlace() throws {
        let scratch = ScratchDirectory("shimplace")
        defer { withExtendedLifetime(scratch) {} }
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        Eventually.until("run 1's shim directory beside the database") { FileManager.default.fileExists(atPath: daemon.database + "-shims/1-1") }
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.stop() // hands the run over to its shim
        let again = try Daemon(config: config, reusing: daemon, environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(again.stderr.contains("1 adopted"), "\(again.stderr)")
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        _ = try again.baton("wait", "1")
        #expect(try Self.phase(connection, run: 1) == ["failure 3 exit"])
        #expect(String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self) == "before\nafter\n")
        again.stop()
    }

    @Test("a reboot (the runtime directory emptied, the run's processes gone with the status its shim wrote): the run ends interrupted, not hanging")
    func rebootEndsRuns() throws {
        let scratch = ScratchDirectory("shimplace")
        defer { withExtendedLifetime(scratch) {} }
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        let shims = try Self.shims(daemon)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.crash()
        // The shutdown's kill: the action ends by SIGTERM and its shim records it, on the tmpfs.
        let group = try #require(SurviveTests.column(connection, "SELECT pgid FROM runs WHERE id = 1").first.flatMap { Int32($0) })
        #expect(kill(-group, SIGTERM) == 0)
        guard Eventually.until("run 1's shim wrote its status", { FileManager.default.fileExists(atPath: shims + "/1-1/status") }) else { return }
        try FileManager.default.removeItem(atPath: runtime)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let again = try Daemon(config: config, reusing: daemon, environment: ["RUNTIME_DIRECTORY": runtime])
        _ = try again.baton("wait", "1")
        #expect(try Self.phase(connection, run: 1) == ["failure - interrupted"])
        again.stop()
    }
}
