import BatonCore
import BatonStore
import Foundation
import Testing

/// The shims' directories under a runtime directory (`$RUNTIME_DIRECTORY`, /run/baton: a tmpfs
/// kept across restarts, emptied by a reboot), their spools and late statuses on the disk beside
/// the database, and what each promise of "a run outlives batond" becomes there.
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

    /// A scratch directory with `run`, a runtime directory batond may use (0755, this user's).
    static func scratch() throws -> (ScratchDirectory, runtime: String) {
        let scratch = ScratchDirectory("shimplace")
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return (scratch, runtime)
    }

    @Test("with $RUNTIME_DIRECTORY: the attempt's directory is there, named after the database, none beside the database; a crash's next batond adopts the run")
    func underRuntimeDirectory() throws {
        let (scratch, runtime) = try Self.scratch()
        defer { withExtendedLifetime(scratch) {} }
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
        #expect(String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self) == "before\nafter\n")
        #expect(again.stderr.contains("1 adopted"), "\(again.stderr)")
        again.stop()
    }

    @Test("the common path: runs that end while batond runs never make the disk's place; their directories under the runtime directory are gone with them")
    func commonPathLeavesDisk() throws {
        let (scratch, runtime) = try Self.scratch()
        defer { withExtendedLifetime(scratch) {} }
        let config = """
            { maxConcurrentRuns: 4, requireUser: false, actions: {
                quick: { exec: ["sh", "-c", "[ \\"$(cat /proc/$PPID/comm)\\" = baton-shim ] || exit 9; echo out; echo err >&2"] },
            } }
            """
        let daemon = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        let shims = try Self.shims(daemon)
        #expect(shims.hasPrefix(runtime + "/"), "\(shims)")
        for _ in 1...20 { #expect(try daemon.baton("run", "quick").code == 0) }
        let connection = try Connection(path: daemon.database, readOnly: true)
        #expect(try SurviveTests.column(connection, "SELECT count(*) FROM runs WHERE phase = 'success'") == ["20"])
        #expect(!FileManager.default.fileExists(atPath: daemon.database + "-shims"), "the disk's place was made")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: shims)) ?? []).isEmpty)
        daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: daemon.database + "-shims"))
    }

    @Test("a planned stop hands a flooding run over: its spool grows on the disk beside the database, not under the runtime directory; the next batond gets every byte")
    func spoolOnDisk() throws {
        let (scratch, runtime) = try Self.scratch()
        defer { withExtendedLifetime(scratch) {} }
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config, environment: ["RUNTIME_DIRECTORY": runtime])
        let shims = try Self.shims(daemon)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.stop() // hands the run over: the shim makes its directory on the disk
        #expect(FileManager.default.fileExists(atPath: daemon.database + "-shims/1-1"))
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        let status = daemon.database + "-shims/1-1/status"
        guard Eventually.until("run 1's shim wrote its status on the disk", { FileManager.default.fileExists(atPath: status) }) else { return }
        #expect(try String(contentsOfFile: daemon.database + "-shims/1-1/output", encoding: .utf8) == "after\n")
        for name in ["status", "output"] { #expect(!FileManager.default.fileExists(atPath: shims + "/1-1/" + name), "\(name) on the tmpfs") }
        let again = try Daemon(config: config, reusing: daemon, environment: ["RUNTIME_DIRECTORY": runtime])
        _ = try again.baton("wait", "1")
        #expect(try Self.phase(connection, run: 1) == ["failure 3 exit"])
        #expect(String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self) == "before\nafter\n")
        // Both its directories removed with it, and the disk's place once empty.
        #expect(!FileManager.default.fileExists(atPath: shims + "/1-1"))
        #expect(!FileManager.default.fileExists(atPath: daemon.database + "-shims"))
        again.stop()
    }

    @Test("an upgrade: the runs a batond left beside the database are adopted by one that keeps its shims under the runtime directory")
    func upgradeFindsEarlierPlace() throws {
        // Where /run/baton is safe (the package installed, tests as root), a batond without the variable keeps its
        // attempts there too: no earlier version's layout to make this way (the house's early return, a pass).
        guard !ShimSetup.isSafeRuntime(ShimSetup.packagedRuntime) else { return }
        let (scratch, runtime) = try Self.scratch()
        defer { withExtendedLifetime(scratch) {} }
        let config = SurviveTests.config(scratch.path)
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        Eventually.until("run 1's shim directory beside the database") { FileManager.default.fileExists(atPath: daemon.database + "-shims/1-1") }
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try SurviveTests.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.crash() // no hand-over: the shim's status would be on the disk anyway; it is where it was
        let again = try Daemon(config: config, reusing: daemon, environment: ["RUNTIME_DIRECTORY": runtime])
        #expect(again.stderr.contains("1 adopted"), "\(again.stderr)")
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        _ = try again.baton("wait", "1")
        #expect(try Self.phase(connection, run: 1) == ["failure 3 exit"])
        #expect(String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self) == "before\nafter\n")
        #expect(!FileManager.default.fileExists(atPath: daemon.database + "-shims/1-1"))
        again.stop()
    }
}
