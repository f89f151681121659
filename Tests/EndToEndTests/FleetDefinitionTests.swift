import BatonCore
import BatonIPC
import Foundation
import Testing

/// Hosts of one fleet whose configs give an action different definitions (another command under
/// the same name): noticed, said, and never shared.
@Suite("End to end: an action defined differently on two fleet hosts", .serialized, .offPool)
struct FleetDefinitionTests {
    @Test("a join on a host whose action differs from the running host's is refused, saying why; the host warns at join; --check-config shows it")
    func differentDefinitions() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        func config(_ host: String, _ word: String) -> String {
            """
            { postgres: "\(conninfo)", host: "\(host)", lease: "15s", actions: {
                gated: { exec: ["sh", "-c", "echo \(word); cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" }, policy: "join" },
                same: { exec: ["true"] } } }
            """
        }
        let a = try Daemon(config: config("web-1", "one"))
        try a.waitForLog("joined the fleet")
        let b = try Daemon(config: config("web-2", "two"))
        try b.waitForLog("joined the fleet")
        // web-2 says at join which action differs from which host's
        #expect(b.stderr.contains("gated") && b.stderr.contains("web-1") && b.stderr.contains("differ"), "\(b.stderr)")
        let first = try #require(try FleetTests.trigger(a, "gated").run?.id)
        // A join on web-1 itself shares the run, as always.
        #expect(try FleetTests.trigger(a, "gated").decision == .joined)
        // A join on web-2 would share web-1's other command: refused, naming the run, its host and why.
        let refused = try FleetTests.trigger(b, "gated")
        #expect(refused.decision != .joined && refused.run?.id != first, "\(String(describing: refused.decision))")
        #expect(refused.error?.code == .busy && refused.error?.run == first, "\(String(describing: refused.error))")
        let message = refused.error?.message ?? ""
        #expect(message.contains("web-1") && message.contains("definition"), "\(message)")
        // An action both define alike is unaffected.
        #expect(try b.baton("run", "same").code == 0)
        // --check-config of web-2's config against the fleet shows the mismatch.
        let check = try execute(Binaries.batond, ["--check-config", b.configPath])
        #expect(check.stdout.contains("gated") && check.stdout.contains("web-1") && check.stdout.contains("differ"), "\(check.stdout) \(check.stderr)")
        #expect(!check.stdout.contains("same:"), "\(check.stdout)")
        // web-1 reloads web-2's definition: it records the new fingerprint, and --check-config agrees.
        try config("web-1", "two").write(toFile: a.configPath, atomically: true, encoding: .utf8)
        #expect(try a.baton("reload").code == 0)
        let agreed = try execute(Binaries.batond, ["--check-config", b.configPath])
        #expect(agreed.code == 0 && !agreed.stdout.contains("warning"), "\(agreed.stdout) \(agreed.stderr)")
        // The run in flight keeps the definition it was created with: still not shared.
        #expect(try FleetTests.trigger(b, "gated").error?.code == .busy)
        gate.release()
        #expect(try FleetTests.wait(a, run: first)?.phase == .success)
    }
}
