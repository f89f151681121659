import BatonCore
import Foundation
import Testing

/// Issue 41: webhooks across a restart in place. The listener batond bound itself (`listen`) is
/// passed on with the control socket: a POST accepted before the restart is answered by the old
/// batond, one that connects meanwhile waits in the backlog for the new one; none gets 503.
@Suite("End to end: webhooks across a restart in place", .serialized, .offPool)
struct WebhookRestartTests {
    @Test("signed POSTs sent without a pause from three clients across two restarts in place: each gets its normal answer (202, a run), none 503 or refused; the listener keeps its port")
    func postsAcrossRestarts() throws {
        let secrets = NSTemporaryDirectory() + "baton-hook-restart-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        FileManager.default.createFile(atPath: secrets + "/ci.secret", contents: Data("ci-0123456789abcdef-secret\n".utf8),
                                       attributes: [.posixPermissions: 0o600])
        let daemon = try Daemon(config: """
            { requireUser: false,
              webhooks: { listen: "127.0.0.1:0", hooks: {
                ci: { action: "gate", secret: { file: "\(secrets)/ci.secret" }, signature: "hmac-sha256", params: { code: "/code" } } } },
              actions: { gate: { exec: ["true"], params: { code: { pattern: "[0-9]+" } }, keyParams: ["code"] } } }
            """)
        defer { daemon.stop() }
        let port = try WebhookClient.port(of: daemon)
        let url = "http://127.0.0.1:\(port)/hooks/ci"
        let answers = Locked<[(code: Int, answer: WebhookClient.Answer)]>([])
        let stop = Locked(false)
        let group = DispatchGroup()
        for client in 0..<3 {
            DispatchQueue.global().async(group: group) {
                var code = client
                while !stop.withLock({ $0 }) {
                    code += 3
                    guard let answer = try? WebhookClient.post(url, scheme: "hmac-sha256", secret: secrets + "/ci.secret",
                                                                body: #"{"code":"\#(code)"}"#, in: secrets) else { continue }
                    answers.withLock { $0.append((code, answer)) }
                }
            }
        }
        for round in 1...2 {
            Eventually.until("\(round * 5) webhooks answered before restart \(round)") { answers.withLock { $0.count } >= round * 5 }
            daemon.signal(SIGUSR2)
            try daemon.waitForLog(" ready: ", count: round + 1)
        }
        Eventually.until("15 webhooks answered, some after the last restart") { answers.withLock { $0.count } >= 15 }
        stop.withLock { $0 = true }
        group.wait()
        let all = answers.withLock { $0 }
        let odd = all.filter { $0.answer.status != 202 || $0.answer.run == nil }
        #expect(odd.isEmpty, "\(odd.count) of \(all.count) POSTs not answered as usual: \(odd.prefix(3).map { "code \($0.code): \($0.answer.status) \($0.answer.body)" })")
        #expect(all.count >= 15)
        #expect(daemon.stderr.components(separatedBy: "127.0.0.1:\(port)/hooks/").count == 4, "the same port after each restart")
    }
}
