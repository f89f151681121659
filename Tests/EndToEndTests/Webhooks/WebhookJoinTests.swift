import BatonCore
import BatonIPC
import Foundation
import Testing

/// A delivery that joined a run in flight says where it came from (issue 37, item 14): `show`
/// lists it with its hook, its sender's address (a trusted proxy's `X-Forwarded-For`, without the
/// port) and its delivery id, on one host and across a fleet.
@Suite("End to end: a webhook trigger that joined a run", .serialized, .offPool)
struct WebhookJoinTests {
    /// A secret, a FIFO the action reads until the test writes it, and the config around them.
    final class Setup {
        let directory = NSTemporaryDirectory() + "baton-hooks-join-" + UUID().uuidString
        var secret: String { directory + "/j.secret" }
        var fifo: String { directory + "/gate" }

        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: secret, contents: Data("j-0123456789abcdef-secret\n".utf8), attributes: [.posixPermissions: 0o600])
            try #require(mkfifo(fifo, 0o600) == 0)
        }

        func config(_ prefix: String = "") -> String {
            """
            { \(prefix)
              webhooks: { listen: "127.0.0.1:0", trustedProxies: ["127.0.0.1"],
                          hooks: { j: { action: "hold", secret: { file: "\(secret)" }, signature: "github" } } },
              actions: { hold: { exec: ["cat", "\(fifo)"], policy: "join" } } }
            """
        }

        /// A signed push, with `X-Forwarded-For` when given.
        func post(_ daemon: Daemon, delivery: String, forwardedFor: String? = nil) throws -> WebhookClient.Answer {
            let signature = try WebhookClient.githubSignature(WebhookClient.githubPush, secretFile: secret)
            let forwarded = forwardedFor.map { ["-H", "X-Forwarded-For: \($0)"] } ?? []
            return try WebhookClient.curl(["-H", "X-GitHub-Event: push", "-H", "X-GitHub-Delivery: \(delivery)", "-H", "X-Hub-Signature-256: \(signature)",
                                           "-H", "Content-Type: application/json"] + forwarded
                                          + ["--data-binary", WebhookClient.githubPush, "http://127.0.0.1:\(try WebhookClient.port(of: daemon))/hooks/j"])
        }

        /// Lets the run's `cat` end.
        func open() throws {
            let gate = try #require(FileHandle(forWritingAtPath: fifo))
            try gate.close()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Two deliveries, the second from `second` and forwarded for 10.0.0.5:8080: it joins the
    /// first's run, and `show` (on `shower`) names its hook, address and delivery.
    static func joined(_ setup: Setup, first: Daemon, second: Daemon, shower: Daemon) throws {
        let made = try setup.post(first, delivery: "d-1")
        #expect(made.status == 202 && made.json["decision"] as? String == "created", "\(made.body)")
        let run = try #require(made.run)
        let joined = try setup.post(second, delivery: "d-2", forwardedFor: "10.0.0.5:8080")
        #expect(joined.status == 202 && joined.run == run && joined.json["decision"] as? String == "joined", "\(joined.body)")
        try setup.open()
        #expect(try Client(path: shower.socket).call(Request(op: .wait, run: Int64(run))).run?.phase == .success)
        let shown = try shower.baton("show", String(run)).stdout
        #expect(shown.contains("triggered by webhook j from 127.0.0.1, delivery d-1"), "\(shown)")
        #expect(shown.contains("  joined (shared this run's outcome)  by webhook j from 10.0.0.5, delivery d-2\n"), "\(shown)")
        #expect(!shown.contains("no peer"), "\(shown)")
        let json = try shower.baton("show", String(run), "--json").stdout
        #expect(json.contains("\"via\" : \"webhook j from 10.0.0.5, delivery d-2\""), "\(json)")
    }

    @Test("a second delivery joins the run the first made: show lists it with its hook, its address without the port, and its delivery")
    func oneHost() throws {
        let setup = try Setup()
        let daemon = try Daemon(config: setup.config())
        try Self.joined(setup, first: daemon, second: daemon, shower: daemon)
    }

    @Test("in a fleet, a delivery to another host joins the run: its record names the hook, address and delivery on every host")
    func fleet() throws {
        let setup = try Setup()
        let conninfo = try Postgres.server().database()
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: setup.config(#"postgres: "\#(conninfo)", host: "web-\#(index)", lease: "15s","#))
            try host.waitForLog("joined the fleet")
            return host
        }
        try Self.joined(setup, first: hosts[0], second: hosts[1], shower: hosts[0])
    }
}
