import BatonCore
import BatonIPC
import Foundation
import Testing

/// Issue 27 across a fleet: two batonds on one PostgreSQL behind one "load balancer" (a forge
/// that sends the same delivery to both): one run per delivery, whichever host answers.
@Suite("End to end: webhooks in a fleet", .serialized, .offPool)
struct WebhookFleetTests {
    @Test("the same delivery POSTed to two hosts, one after the other and then at once, makes one run; both answers name it")
    func oneRunPerDelivery() throws {
        let secrets = NSTemporaryDirectory() + "baton-hooks-fleet-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let secret = secrets + "/gh.secret"
        FileManager.default.createFile(atPath: secret, contents: Data("gh-0123456789abcdef-secret\n".utf8), attributes: [.posixPermissions: 0o600])
        let conninfo = try Postgres.server().database()
        // `queue`: a duplicate that got past the delivery check would make a follow-up, a second run.
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: """
                { postgres: "\(conninfo)", host: "web-\(index)", lease: "15s", maxConcurrentRuns: 8,
                  webhooks: { listen: "127.0.0.1:0",
                              hooks: { gh: { action: "deploy", secret: { file: "\(secret)" }, signature: "github", params: { env: "/ref" } } } },
                  actions: { deploy: { exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"], policy: "queue",
                                       params: { env: { pattern: "refs/heads/[a-z]+" } }, retention: { maxRunsPerAction: 1 } } } }
                """)
            try host.waitForLog("joined the fleet")
            return host
        }
        let bases = try hosts.map { "http://127.0.0.1:\(try WebhookClient.port(of: $0))/hooks/gh" }
        let signature = try WebhookClient.githubSignature(WebhookClient.githubPush, secretFile: secret)
        @Sendable func post(_ base: String, _ delivery: String) throws -> WebhookClient.Answer {
            try WebhookClient.curl(["-H", "X-GitHub-Event: push", "-H", "X-GitHub-Delivery: \(delivery)", "-H", "X-Hub-Signature-256: \(signature)",
                                    "-H", "Content-Type: application/json", "--data-binary", WebhookClient.githubPush, base])
        }
        // One after the other: the second host finds the first's delivery in PostgreSQL.
        let first = try post(bases[0], "d-sequential")
        #expect(first.status == 202, "\(first.body)")
        let run = try #require(first.run)
        let second = try post(bases[1], "d-sequential")
        #expect(second.status == 202 && second.run == run && second.json["replayed"] as? Bool == true, "\(second.body)")
        // At once: both hosts decide; the transaction that records the delivery first makes the run.
        let answers = Locked<[WebhookClient.Answer?]>([nil, nil])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let answer = try? post(bases[index], "d-concurrent")
            answers.withLock { $0[index] = answer }
        }
        let both = answers.withLock { $0 }.compactMap { $0 }
        #expect(both.count == 2 && both.allSatisfy { $0.status == 202 }, "\(both.map(\.body))")
        let runs = Set(both.compactMap(\.run))
        #expect(runs.count == 1 && !runs.contains(run), "\(both.map(\.body))")
        #expect(both.filter { $0.json["replayed"] as? Bool == true }.count == 1, "\(both.map(\.body))")
        // The fleet's history: one run per delivery, each saying where it came from.
        let history = try hosts[1].baton("history", "--action", "deploy", "--json").stdout
        #expect(history.components(separatedBy: "\"id\"").count == 3, "\(history)")
        #expect(history.contains("webhook gh from 127.0.0.1, delivery d-sequential") && history.contains("delivery d-concurrent"), "\(history)")
        // Retention keeps a run a delivery made for 24 hours, whatever its limits (here: one run).
        for id in [Int64(run)] + runs.map(Int64.init) {
            #expect(try Client(path: hosts[0].socket).call(Request(op: .wait, run: id)).run?.phase == .success)
        }
        #expect(try hosts[0].baton("prune").stdout == "nothing to remove\n")
    }

    @Test("the rules hold on every host of a fleet: ping is pong, issues and a refused branch are ignored, no run in the fleet's history; a push to main runs once")
    func rules() throws {
        let secrets = try WebhookRulesEndToEndTests.secrets()
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let conninfo = try Postgres.server().database()
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: WebhookRulesEndToEndTests.config(secrets: secrets,
                                                                           prefix: #"postgres: "\#(conninfo)", host: "web-\#(index)", lease: "15s","#))
            try host.waitForLog("joined the fleet")
            return host
        }
        let bases = try hosts.map { "http://127.0.0.1:\(try WebhookClient.port(of: $0))" }
        for base in bases {
            let ping = try WebhookRulesEndToEndTests.github(base, "ping", delivery: "p-\(base)", ref: "", secrets: secrets)
            #expect(ping.status == 200 && ping.json["pong"] as? Bool == true, "\(ping.body)")
            let issues = try WebhookRulesEndToEndTests.github(base, "issues", delivery: "i-\(base)", ref: "refs/heads/main", secrets: secrets)
            #expect(issues.status == 202 && issues.json["reason"] as? String == "event", "\(issues.body)")
            let feature = try WebhookRulesEndToEndTests.github(base, "push", delivery: "f-\(base)", ref: "refs/heads/feature", secrets: secrets)
            #expect(feature.status == 202 && feature.json["reason"] as? String == "param", "\(feature.body)")
        }
        #expect(try WebhookRulesEndToEndTests.runs(hosts[0]) == 0)
        let main = try WebhookRulesEndToEndTests.github(bases[1], "push", delivery: "m-1", ref: "refs/heads/main", secrets: secrets)
        #expect(main.status == 202 && main.run != nil, "\(main.body)")
        let run = try #require(main.run)
        #expect(try Client(path: hosts[0].socket).call(Request(op: .wait, run: Int64(run))).run?.phase == .success)
        #expect(try WebhookRulesEndToEndTests.runs(hosts[0]) == 1)
    }
}
