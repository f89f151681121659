import BatonCore
import Foundation
import Testing

/// Two local users holding the webhook port (issue 37, item 5): a reverse proxy's signed
/// deliveries still go through, since the port's last connections are kept for its user.
@Suite("End to end: local users flooding the webhook port", .serialized, .offPool)
struct WebhookFloodTests {
    typealias TemporaryUser = RunAsIdentityTests.TemporaryUser

    /// `setpriv` arguments that become `user` (its uid, its primary group, no other groups).
    static func become(_ user: TemporaryUser) -> [String] {
        ["--reuid=\(user.uid)", "--regid=\(getpwnam(user.name)?.pointee.pw_gid ?? 65534)", "--clear-groups"]
    }

    /// `connections` connections from `user`, each sending a POST's head one byte every 0.2 s
    /// and never its end, opened again as soon as batond closes one, until `stop`.
    final class SlowSender {
        let process = Process()
        let input = Pipe(), output = Pipe()
        static let script = #"""
        import os, select, socket, sys, time
        port, count = int(sys.argv[1]), int(sys.argv[2])
        head = b"POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n"
        slots, up = [None] * count, False
        while True:
            for i in range(count):
                if slots[i] is None:
                    s = socket.socket()
                    try:
                        s.connect(("127.0.0.1", port)); s.setblocking(False); slots[i] = [s, 0]
                    except OSError:
                        s.close()
            if not up and all(slots):
                up = True; sys.stdout.write("up\n"); sys.stdout.flush()
            for i, slot in enumerate(slots):
                if slot is None: continue
                s, sent = slot
                try:
                    if s.recv(4096, socket.MSG_DONTWAIT) == b"": raise OSError("closed")
                except BlockingIOError:
                    pass
                except OSError:
                    s.close(); slots[i] = None; continue
                try:
                    s.send(head[sent % len(head):sent % len(head) + 1]); slot[1] = sent + 1
                except BlockingIOError:
                    pass
                except OSError:
                    s.close(); slots[i] = None
            if select.select([sys.stdin], [], [], 0.2)[0]: break
        """#

        /// Returns once every connection has been opened once.
        init(_ user: TemporaryUser, port: UInt16, connections: Int = 40) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = WebhookFloodTests.become(user) + ["/usr/bin/python3", "-c", Self.script, String(port), String(connections)]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let line = output.fileHandleForReading.availableData
            try #require(String(decoding: line, as: UTF8.self) == "up\n", "the slow sender as \(user.name) ended before it was up")
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("two local users hold 40 slow connections each; a signed delivery from the proxy's user (trustedProxies \"user:…\") is taken 5 of 5, its X-Forwarded-For believed")
    func proxyServedDuringFlood() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let (alice, bob, proxy) = (try TemporaryUser("bfla"), try TemporaryUser("bflb"), try TemporaryUser("bprx"))
        let secrets = NSTemporaryDirectory() + "baton-hooks-flood-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let secret = secrets + "/gh.secret"
        FileManager.default.createFile(atPath: secret, contents: Data("gh-0123456789abcdef-secret\n".utf8), attributes: [.posixPermissions: 0o600])
        let daemon = try Daemon(config: """
            { webhooks: { listen: "127.0.0.1:0", trustedProxies: ["user:\(proxy.name)"],
                          hooks: { gh: { action: "deploy", secret: { file: "\(secret)" }, signature: "github" } } },
              actions: { deploy: { exec: ["true"], policy: "queue" } } }
            """)
        let port = try WebhookClient.port(of: daemon)
        let senders = try [alice, bob].map { try SlowSender($0, port: port) }
        defer { for sender in senders { sender.stop() } }
        let signature = try WebhookClient.githubSignature(WebhookClient.githubPush, secretFile: secret)
        var taken: [Int] = []
        for index in 1...5 {
            let sent = try execute("/usr/bin/setpriv", Self.become(proxy) + ["/usr/bin/curl",
                                                        "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                                                        "-H", "X-GitHub-Event: push", "-H", "X-GitHub-Delivery: flood-\(index)",
                                                        "-H", "X-Hub-Signature-256: \(signature)", "-H", "X-Forwarded-For: 203.0.113.9",
                                                        "-H", "Content-Type: application/json", "--data-binary", WebhookClient.githubPush,
                                                        "http://127.0.0.1:\(port)/hooks/gh"])
            if sent.stdout == "202" { taken.append(index) } else { Issue.record("delivery \(index): \(sent.stdout) \(sent.stderr)") }
        }
        #expect(taken == [1, 2, 3, 4, 5])
        let history = try daemon.baton("history", "--action", "deploy", "--json").stdout
        #expect(history.contains("webhook gh from 203.0.113.9, delivery flood-1"), "\(history)")
    }

    /// Sends half a head and waits for batond to close: prints the answer's first line and the seconds it took.
    static let halfHead = #"""
    import socket, sys, time
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    start = time.monotonic()
    s.sendall(b"POST /hooks/gh HTTP/1.1\r\nHost: x\r\n")
    answer = b""
    while chunk := s.recv(4096): answer += chunk
    print(answer.split(b"\r\n")[0].decode(), round(time.monotonic() - start, 1))
    """#

    @Test("a local user's unfinished request loses its connection after 2 seconds (408); the proxy's user has the full 5")
    func requestDeadline() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let (alice, proxy) = (try TemporaryUser("bfla"), try TemporaryUser("bprx"))
        let daemon = try Daemon(config: """
            { webhooks: { listen: "127.0.0.1:0", trustedProxies: ["user:\(proxy.name)"], hooks: {} }, actions: { a: { exec: ["true"] } } }
            """)
        let port = try WebhookClient.port(of: daemon)
        let senders = try [alice, proxy].map { user in
            try Spawned(["/usr/bin/setpriv"] + Self.become(user) + ["/usr/bin/python3", "-c", Self.halfHead, String(port)])
        }
        let (local, kept) = (senders[0].waitForExit().stdout, senders[1].waitForExit().stdout)
        let seconds = { (line: String) in Double(line.split(separator: " ").last?.dropLast() ?? "") ?? 0 }
        #expect(local.hasPrefix("HTTP/1.1 408 ") && seconds(local) < 4, "\(local)")
        #expect(kept.hasPrefix("HTTP/1.1 408 ") && seconds(kept) >= 4.5, "\(kept)")
    }
}
