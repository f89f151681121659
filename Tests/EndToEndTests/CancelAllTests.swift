import BatonCore
import Foundation
import Testing

@Suite("End to end: baton cancel --all", .offPool)
struct CancelAllTests {
    static let config = #"""
        { requireUser: false, actions: {
            a: { exec: ["sleep", "600"] },
            b: { exec: ["sleep", "600"], policy: "queue" },
            c: { exec: ["true"] },
        } }
        """#

    @Test("cancel --all ends every run in flight of every action, loading and queued, and waits for them; then nothing is in flight")
    func cancelsEverything() throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "c").code == 0)
        for action in ["a", "b", "b"] { #expect(try daemon.baton("run", action, "--detach").code == 0) }
        let cancelled = try daemon.baton("cancel", "--all", "--json")
        #expect(cancelled.code == 0, "\(cancelled.stderr)")
        let runs = try JSONDecoder().decode([RunSnapshot].self, from: Data(cancelled.stdout.utf8))
        #expect(runs.map(\.action).sorted() == ["a", "b", "b"], "\(cancelled.stdout)")
        #expect(runs.allSatisfy { $0.phase == .cancelled }, "\(cancelled.stdout)")
        let after = try daemon.baton("cancel", "--all")
        #expect(after.code == 0 && after.stdout == "nothing in flight to cancel\n", "\(after.stdout) \(after.stderr)")
        #expect(try daemon.baton("history", "-a", "c", "--json").stdout.contains("\"success\""))
    }

    @Test("cancel --all with an ACTION, a RUN or --key is a usage error naming what it takes", arguments: [["a"], ["7"], ["--key", "a"]])
    func usage(_ extra: [String]) throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let result = try execute(Binaries.baton, ["--socket", daemon.socket, "cancel", "--all"] + extra)
        #expect(result.code == 2 && result.stderr.contains("--all takes no ACTION, RUN or --key"), "\(result.stderr)")
    }
}
