import Foundation
import Testing

/// `baton run` and `baton wait` on a terminal (script's pseudo-terminal), where they draw the
/// loading line on stderr: it is drawn while the run goes and cleared before the outcome.
@Suite("End to end: the loading line of run and wait on a terminal", .offPool)
struct SpinnerEndToEndTests {
    static let config = """
        { actions: { pause: { exec: ["sh", "-c", "sleep 1; echo done"], policy: "reject" } } }
        """
    static let clearLine = "\r\u{1B}[2K"

    /// `baton ARGUMENTS` on a terminal of its own: what the terminal got, stdout and stderr together.
    static func onTerminal(_ daemon: Daemon, _ arguments: String) throws -> Output {
        try execute("/usr/bin/script", ["-qec", "\(Binaries.baton) --socket \(daemon.socket) \(arguments)", "/dev/null"])
    }

    /// Checks that `output` drew run 1's loading line and printed `outcome` after the last clear, with no frame after it.
    static func drawnThenCleared(_ output: Output, outcome: String) {
        let pieces = output.stdout.components(separatedBy: clearLine)
        #expect(pieces.count > 1, "never drew or cleared: \(output.stdout.debugDescription)")
        #expect(pieces.dropLast().contains { $0.contains("pause run 1 ") }, "\(output.stdout.debugDescription)")
        let after = pieces.last ?? ""
        #expect(after.contains(outcome) && !after.contains("loading"), "\(after.debugDescription)")
    }

    @Test("baton run: the line is drawn while the run goes and cleared before the outcome is printed")
    func runOnTerminal() throws {
        let daemon = try Daemon(config: Self.config)
        let run = try Self.onTerminal(daemon, "run pause")
        #expect(run.code == 0, "\(run)")
        Self.drawnThenCleared(run, outcome: "pause run 1 succeeded")
    }

    /// The run waits for a gate file that the test creates once the terminal has drawn its first frame:
    /// a run that ended before `baton wait` came would be answered from the history, with no frame.
    @Test("baton wait: the same for a run started detached")
    func waitOnTerminal() throws {
        let gate = NSTemporaryDirectory() + "baton-spinner-gate-\(UUID().uuidString)"
        let typescript = gate + ".typescript"
        defer { for path in [gate, typescript] { try? FileManager.default.removeItem(atPath: path) } }
        let daemon = try Daemon(config: """
            { actions: { pause: { exec: ["sh", "-c", "until [ -e \(gate) ]; do sleep 0.05; done; echo done"], policy: "reject" } } }
            """)
        #expect(try daemon.baton("run", "pause", "--detach").code == 0)
        let script = try Spawned(["/usr/bin/script", "-qfec", "\(Binaries.baton) --socket \(daemon.socket) wait 1", typescript])
        let drawn = Eventually.until("a frame of run 1 on the terminal") {
            ((try? String(contentsOfFile: typescript, encoding: .utf8)) ?? "").contains("pause run 1 ")
        }
        #expect(FileManager.default.createFile(atPath: gate, contents: nil))
        let wait = script.waitForExit()
        guard drawn else { return }
        #expect(wait.code == 0, "\(wait)")
        Self.drawnThenCleared(wait, outcome: "run 1 succeeded")
    }
}
