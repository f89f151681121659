import BatonCore
import BatonStore
import Foundation
import Testing

/// A cancel asked of a running run outlives a crash of batond (review-fleetrecovery12 H1, M1): it
/// is written down as the run's process is told to stop (`runs.stop`), so the next batond ends the
/// run `cancelled` as asked instead of starting it again (`onInterrupt: "restart"`), and stops a
/// survivor it adopts. Each run ignores SIGTERM, so it is still running when batond is killed.
@Suite("End to end: a cancel outlives batond", .serialized, .offPool)
struct CancelRestartTests {
    static func config(_ directory: String) -> String {
        let script = #"trap '' TERM; echo $BATON_RUN_ID >> \"$MARKS\"; while :; do sleep 0.05; done"#
        let env = #"env: { MARKS: "\#(directory)/marks", CRASHMARK: "\#(directory)" }"#
        return """
            { maxConcurrentRuns: 4, requireUser: false, actions: {
                mortal: { exec: ["sh", "-c", "\(script)"], \(env), onInterrupt: "restart", killGrace: "60s", survivesRestart: false },
                survivor: { exec: ["sh", "-c", "\(script)"], \(env), onInterrupt: "restart", killGrace: "5s" },
            } }
            """
    }

    /// One text value read by `connection`, opened while the first batond ran (a read-only
    /// connection opened later cannot open the history the restarted batond holds: SQLITE_CANTOPEN).
    static func row(_ connection: Connection, _ sql: String) -> String? {
        try? connection.withStatement(sql) { statement in try statement.step() ? statement.string(0) : nil }
    }

    /// Starts `action`'s run 1, cancels it (answered once the cancel is durable, the run still
    /// running: it ignores SIGTERM), kills batond and starts the next one; returns both. The first
    /// is kept to the test's end: its `deinit` kills what is left of the database's runs.
    static func cancelThenCrash(_ action: String, _ scratch: ScratchDirectory) throws -> (first: Daemon, again: Daemon, Connection) {
        let config = Self.config(scratch.path)
        let daemon = try Daemon(config: config)
        let connection = try Connection(path: daemon.database, readOnly: true)
        #expect(try daemon.baton("run", action, "--detach").stdout == "1\n")
        try Eventually.until("run 1 wrote its mark") { (try? String(contentsOfFile: scratch.file("marks"), encoding: .utf8)) == "1\n" }
        // Answered once the cancel is recorded: the row says so then, the run still loading.
        #expect(try daemon.baton("cancel", "1", "--no-wait").code == 0)
        let row = Self.row(connection, "SELECT phase || ' ' || coalesce(stop, '-') FROM runs WHERE id = 1")
        #expect(row == "loading cancelled \(getuid())", "run 1's cancel not written down when answered")
        daemon.crash()
        return (daemon, try Daemon(config: config, reusing: daemon), connection)
    }

    /// Run 1 ended `cancelled`, reason `cancelled`, within `seconds`; its process ran once and nothing of it is left.
    static func endedAsAsked(_ connection: Connection, _ scratch: ScratchDirectory, within seconds: Double) {
        guard Eventually.until("run 1 ended after the restart", within: seconds, {
            Self.row(connection, "SELECT phase FROM runs WHERE id = 1 AND ended_at IS NOT NULL") != nil
        }) else { return }
        #expect(Self.row(connection, "SELECT phase || ' ' || coalesce(reason, '-') FROM runs WHERE id = 1") == "cancelled cancelled")
        #expect((try? String(contentsOfFile: scratch.file("marks"), encoding: .utf8)) == "1\n", "run 1's process ran again")
        Eventually.until("nothing of run 1 left") { CrashTests.marked(scratch.path).isEmpty }
    }

    enum Case: String, CaseIterable, CustomTestStringConvertible {
        /// Its processes died with batond (`survivesRestart: false`): not restarted.
        case mortal = "a cancelled run whose processes died with batond is not restarted"
        /// Its shim outlived batond: adopted, and stopped as asked (its 5 s kill grace counts again from the adoption).
        case survivor = "a cancelled run whose shim outlived batond is adopted and stopped as asked"
        var testDescription: String { rawValue }
    }

    @Test("a cancelled run ends cancelled after the crash, its process ran once", arguments: Case.allCases)
    func endsAsAsked(_ run: Case) throws {
        let scratch = ScratchDirectory("cancel-restart")
        defer { withExtendedLifetime(scratch) {} }
        let (first, again, connection) = try Self.cancelThenCrash(String(describing: run), scratch)
        defer { withExtendedLifetime(first) {} }
        Self.endedAsAsked(connection, scratch, within: run == .survivor ? 40 : 30)
        #expect(again.stderr.contains(run == .survivor ? "1 adopted" : "0 adopted"), "\(again.stderr)")
        again.stop()
    }
}
