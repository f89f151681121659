import BatonCore
import Foundation
import Testing

/// Issue 37, items 9, 16 and 18, end to end: the real CLI against a real batond (or none).
@Suite("End to end: what the CLI says is whole and true", .offPool)
struct CLITruthEndToEndTests {
    static func config(gate: FifoGate) -> String {
        """
        { actions: {
            slow: { exec: ["sleep", "600"], policy: "replace" },
            gated: { exec: ["/bin/sh", "-c", "read line < \(gate.path)"], policy: "replace" },
            deploy: { exec: ["true"] },
        } }
        """
    }

    @Test("Ctrl-C on `baton run` says the run goes on and how to wait for or cancel it, ends by SIGINT (130), and the run is still loading")
    func interrupted() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        let run = try Spawned([Binaries.baton, "--socket", daemon.socket, "run", "slow"])
        try daemon.waitForLog("run 1 slow: queued → loading")
        kill(run.pid, SIGINT)
        let output = run.waitForExit()
        #expect(output.stderr == "^C: run 1 goes on; baton wait 1 or baton cancel 1\n")
        #expect(output.stdout.isEmpty)
        // Ended by the signal itself, as a shell expects of a child it interrupted: `$?` is 130.
        #expect(run.waitStatus & 0x7f == SIGINT, "wait status \(run.waitStatus)")
        let shown = try daemon.baton("show", "1", "--json")
        let story = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
        #expect((story?["run"] as? [String: Any])?["phase"] as? String == "loading", "\(shown)")
        #expect(try daemon.baton("cancel", "1").code == 0)
    }

    @Test("a SIGINT ignored when baton starts (a script's background job, nohup) stays ignored: baton waits on")
    func ignoredStaysIgnored() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        // The shell ignores SIGINT, and exec keeps it ignored for baton, under the same pid.
        let run = try Spawned(["/bin/sh", "-c", "trap '' INT; exec \"$0\" --socket \"$1\" run slow", Binaries.baton, daemon.socket])
        try daemon.waitForLog("run 1 slow: queued → loading")
        kill(run.pid, SIGINT)
        // Still following the run: its cancel is what ends it, with the cancelled exit code.
        #expect(try daemon.baton("cancel", "1").code == 0)
        let output = run.waitForExit()
        #expect(output.code == 3 && !output.stderr.contains("^C"), "\(output)")
    }

    @Test("replace says which run it replaced: in the outcome line, --json, and beside --detach's id")
    func replaced() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        let first = try daemon.baton("run", "slow", "--detach")
        #expect(first.stdout == "1\n" && first.stderr.isEmpty, "\(first)")
        let second = try daemon.baton("run", "slow", "--detach")
        #expect(second.stdout == "2\n" && second.stderr == "replaced run 1\n", "\(second)")
        let third = try daemon.baton("run", "slow", "--detach", "--json")
        let answer = try JSONSerialization.jsonObject(with: Data(third.stdout.utf8)) as? [String: Any]
        #expect(answer?["replaced"] as? [Int] == [2] && answer?["decision"] as? String == "replaced", "\(third)")
        #expect(try daemon.baton("cancel", "slow").code == 0)

        #expect(try daemon.baton("run", "gated", "--detach").stdout == "4\n")
        let waiting = try Spawned([Binaries.baton, "--socket", daemon.socket, "run", "gated"], environment: ["NO_COLOR": "1"])
        try daemon.waitForLog("run 5 gated: queued → loading")
        gate.release()
        let outcome = waiting.waitForExit()
        #expect(outcome.code == 0, "\(outcome)")
        #expect(outcome.stdout.hasPrefix("✓ gated run 5 (replaced run 4) succeeded in "), "\(outcome)")
    }

    @Test("an unknown action, command, option or help topic: a usage error (exit 2) that suggests the close name", arguments: [
        (["run", "deplyo"], "Error: unknown action \"deplyo\"\nTry: did you mean \"deploy\"?\n"),
        (["cancel", "slwo"], "Error: unknown action \"slwo\"\nTry: did you mean \"slow\"?\n"),
        (["run", "zzzzzz"], "Error: unknown action \"zzzzzz\"\nTry: baton actions lists the actions you may use\n"),
        (["stauts"], "Error: unknown command stauts\nTry: did you mean \"status\"? (baton --help lists them)\n"),
        (["run", "deploy", "--polcy", "replace"], "Error: baton run: unknown option --polcy\nTry: did you mean \"--policy\"? (baton run --help lists them)\n"),
        (["help", "nosuch"], "Error: baton help: unknown command nosuch\nTry: baton --help\n"),
        (["help", "histroy"], "Error: baton help: unknown command histroy\nTry: did you mean \"history\"? (baton --help lists them)\n"),
    ])
    func suggested(arguments: [String], expected: String) throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        let output = try execute(Binaries.baton, ["--socket", daemon.socket] + arguments)
        #expect(output.code == 2 && output.stderr == expected && output.stdout.isEmpty, "\(output)")
    }

    @Test("baton reload of a config with a syntax error: FILE:LINE:COLUMN and what was expected, on one line; the old config stays")
    func reloadSyntax() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        try "{ actions: { deploy: { exec: [\"true\"] }\n  slow: {} } }\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.baton("reload")
        #expect(refused.code != 0)
        #expect(refused.stderr.hasPrefix("Error: \(daemon.configPath):2:3: expected ',' or '}' after the value of actions.deploy, found slow\n"), "\(refused)")
        #expect(try daemon.baton("run", "deploy").code == 0)
    }

    @Test("SIGHUP with a config holding 2e- (Foundation's reader traps on it): refused naming line and column, batond lives on")
    func reloadBareExponent() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        defer { daemon.stop() }
        try "{ actions: { deploy: { exec: [\"true\"], timeout: 2e- } } }\n".write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try daemon.waitForLog("reload refused")
        #expect(daemon.stderr.contains("\(daemon.configPath):1:49: 2e- is not a number: an exponent needs digits after its sign"), "\(daemon.stderr)")
        #expect(try daemon.baton("run", "deploy").code == 0)
    }

    @Test("`baton help COMMAND` still prints that command's help and exits 0")
    func helpTopic() throws {
        let output = try execute(Binaries.baton, ["help", "history"])
        #expect(output.code == 0 && output.stdout.hasPrefix("Usage: baton history"))
    }

    @Test("through a pipe, with no COLUMNS, history's ERROR column is whole (it was cut at 100 columns)")
    func pipedWhole() async throws {
        let history = try await SeededHistory()
        let table = try execute(Binaries.baton, ["--socket", history.directory + "/nobody.sock", "--database", history.path, "history", "--utc"],
                                environment: ["COLUMNS": ""])
        #expect(!table.stdout.contains("…"), "\(table.stdout)")
        #expect(table.stdout.split(separator: "\n").contains { $0.hasPrefix("2 ") && $0.hasSuffix("exited with status 3: disk full, \"really\"") },
                "\(table.stdout)")
    }

    @Test("batond down, its history file in a directory this user may not enter: `permission denied`, not `no such file`",
          .enabled(if: geteuid() == 0, "setpriv to another user needs root"))
    func permissionDenied() throws {
        let directory = NSTemporaryDirectory() + "baton-denied-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/state/baton", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #require(FileManager.default.createFile(atPath: directory + "/state/baton/history.sqlite", contents: Data()))
        try #require(chmod(directory, 0o700) == 0)
        // A socket path nobody may reach, in a directory everyone may enter: batond is simply not there.
        let socket = NSTemporaryDirectory() + "baton-nobody-\(UUID().uuidString).sock"
        let output = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", socket, "history"],
                                 environment: ["XDG_STATE_HOME": directory + "/state"])
        #expect(output.code == 69)
        #expect(output.stderr.hasPrefix("Error: batond is not running and the history at \(directory)/state/baton/history.sqlite cannot be read: "
            + "cannot open the history database \(directory)/state/baton/history.sqlite: permission denied\n"
            + "Try: start it with `batond --config FILE` (it reads the history for you), or read the file as a user who may: sudo baton"), "\(output)")
    }
}
