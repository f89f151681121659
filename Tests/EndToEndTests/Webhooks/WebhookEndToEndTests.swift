import BatonCore
import BatonHooks
import Foundation
import Testing

/// Issue 27 end to end: a real batond with `webhooks`, pressed by urllib and curl.
@Suite("End to end: webhooks", .serialized, .offPool)
struct WebhookEndToEndTests {
    /// A directory with the hooks' secrets, and a batond whose config names them.
    final class Setup {
        let secrets = NSTemporaryDirectory() + "baton-hooks-e2e-" + UUID().uuidString
        let daemon: Daemon
        let base: String

        init() throws {
            try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true)
            for name in ["gh", "gl", "ci"] {
                FileManager.default.createFile(atPath: "\(secrets)/\(name).secret", contents: Data("\(name)-0123456789abcdef-secret\n".utf8),
                                               attributes: [.posixPermissions: 0o600])
            }
            daemon = try Daemon(config: """
                {
                  socketMode: "0666",
                  shutdownGrace: "1s",
                  metrics: { listen: "127.0.0.1:0" },
                  webhooks: {
                    listen: "127.0.0.1:0",
                    maxBody: 65536,
                    hooks: {
                      gh: { action: "deploy", secret: { file: "\(secrets)/gh.secret" }, signature: "github", params: { env: "/ref" } },
                      gl: { action: "deploy", secret: { file: "\(secrets)/gl.secret" }, signature: "gitlab", params: { env: "/ref" } },
                      ci: { action: "gate", secret: { file: "\(secrets)/ci.secret" }, signature: "hmac-sha256", params: { code: "/code" } },
                      hold: { action: "hold", secret: { file: "\(secrets)/ci.secret" }, signature: "hmac-sha256" },
                      limited: { action: "gate", secret: { file: "\(secrets)/ci.secret" }, signature: "hmac-sha256", params: { code: "/code" },
                                 rateLimit: { requests: 1, per: "1h" } },
                    },
                  },
                  actions: {
                    deploy: { exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"], params: { env: { pattern: "refs/heads/[a-z]+" } } },
                    gate: { exec: ["sh", "-c", "exit $BATON_PARAM_CODE"], params: { code: { pattern: "[0-9]" } } },
                    hold: { exec: ["sleep", "30"], policy: "reject" },
                  },
                }
                """)
            base = "http://127.0.0.1:\(try WebhookClient.port(of: daemon))"
        }

        func secret(_ name: String) -> String { "\(secrets)/\(name).secret" }

        deinit { try? FileManager.default.removeItem(atPath: secrets) }
    }

    @Test("a GitHub push presses deploy with env from /ref, once per delivery; CI waits for the outcome; the run says where it came from")
    func githubPush() throws {
        let setup = try Setup()
        let delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
        let headers = ["X-GitHub-Event": "push", "X-GitHub-Delivery": delivery]
        let first = try WebhookClient.post(setup.base + "/hooks/gh?wait=30s", scheme: "github", secret: setup.secret("gh"),
                                           body: WebhookClient.githubPush, headers: headers, in: setup.secrets)
        #expect(first.status == 200, "\(first.body)")
        let run = try #require(first.run)
        #expect(first.json["phase"] as? String == "success")
        #expect(first.json["status"] as? String == "/hooks/gh/runs/\(run)")
        // The forge delivers again (it saw no answer): the same run, not a second one; curl this time.
        let signature = try WebhookClient.githubSignature(WebhookClient.githubPush, secretFile: setup.secret("gh"))
        let again = try WebhookClient.curl(["-H", "X-GitHub-Event: push", "-H", "X-GitHub-Delivery: \(delivery)", "-H", "X-Hub-Signature-256: \(signature)",
                                            "-H", "Content-Type: application/json", "--data-binary", WebhookClient.githubPush, setup.base + "/hooks/gh"])
        #expect(again.status == 202, "\(again.body)")
        #expect(again.run == run && again.json["replayed"] as? Bool == true)
        let history = try setup.daemon.baton("history", "--action", "deploy", "--json")
        #expect(history.stdout.components(separatedBy: "\"id\"").count == 2, "\(history.stdout)")
        let via = "webhook gh from 127.0.0.1, delivery \(delivery)"
        #expect(history.stdout.contains("\"via\" : \"\(via)\""), "\(history.stdout)")
        let table = try setup.daemon.baton("history", "--action", "deploy").stdout
        #expect(table.contains("BY") && table.contains(via), "\(table)")
        #expect(try setup.daemon.baton("show", String(run), "--json").stdout.contains("\"via\" : \"\(via)\""))
        let shown = try setup.daemon.baton("show", String(run))
        #expect(shown.stdout.contains("env=refs/heads/main"), "\(shown.stdout)")
        #expect(shown.stdout.contains("triggered by \(via) with policy reject"), "\(shown.stdout)")
        #expect(shown.stdout.contains("deploying refs/heads/main"), "\(shown.stdout)")
        // The status URL, with the 202's token; without one it is refused.
        let token = try #require(again.json["token"] as? String)
        let status = try WebhookClient.curl(["-H", "Authorization: Bearer \(token)", setup.base + "/hooks/gh/runs/\(run)"])
        #expect(status.status == 200 && status.json["phase"] as? String == "success", "\(status.body)")
        #expect(try WebhookClient.curl([setup.base + "/hooks/gh/runs/\(run)"]).status == 401)
        #expect(try WebhookClient.curl(["-H", "Authorization: Bearer \(token)", setup.base + "/hooks/gh/runs/\(run + 1)"]).status == 401)
        // A new delivery is a new press.
        let other = try WebhookClient.post(setup.base + "/hooks/gh", scheme: "github", secret: setup.secret("gh"), body: WebhookClient.githubPush,
                                           headers: ["X-GitHub-Event": "push", "X-GitHub-Delivery": "another"], in: setup.secrets)
        #expect(other.status == 202 && other.run != nil && other.run != run, "\(other.body)")
        let metrics = try MetricsEndToEndTests.TCP.exchange(try MetricsEndToEndTests.port(of: setup.daemon), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(metrics.contains(#"baton_webhook_requests_total{hook="gh",code="200"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"baton_webhook_requests_total{hook="gh",code="202"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"baton_webhook_requests_total{hook="gh",code="401"} 2"#), "\(metrics)")
    }

    @Test("?wait= answers 200 for success, 500 for failure, 409 when the action rejects; GitLab's token presses too")
    func outcomes() throws {
        let setup = try Setup()
        func ci(_ code: String, wait: String = "?wait=30s") throws -> WebhookClient.Answer {
            try WebhookClient.post(setup.base + "/hooks/ci" + wait, scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": \#(code)}"#, in: setup.secrets)
        }
        let success = try ci("0")
        #expect(success.status == 200 && success.json["phase"] as? String == "success", "\(success.body)")
        let failure = try ci("3")
        #expect(failure.status == 500 && failure.json["phase"] as? String == "failure" && failure.json["exitCode"] as? Int == 3, "\(failure.body)")
        // Authenticated, so it may say why: the action's own pattern refuses the param, which
        // ignores the delivery (202, no run) rather than failing it (issue 37).
        let refused = try ci("\"x\"")
        #expect(refused.status == 202 && refused.run == nil && refused.body.contains("does not match"), "\(refused.body)")
        let holding = try WebhookClient.post(setup.base + "/hooks/hold", scheme: "hmac-sha256", secret: setup.secret("ci"), body: "{}", in: setup.secrets)
        #expect(holding.status == 202 && holding.json["phase"] != nil, "\(holding.body)")
        let busy = try WebhookClient.post(setup.base + "/hooks/hold?wait=5s", scheme: "hmac-sha256", secret: setup.secret("ci"), body: "{}", in: setup.secrets)
        #expect(busy.status == 409 && busy.body.contains("busy"), "\(busy.body)")
        let gitlab = try WebhookClient.curl(["-H", "X-Gitlab-Token: gl-0123456789abcdef-secret", "-H", "X-Gitlab-Event: Push Hook",
                                             "--data-binary", #"{"object_kind":"push","ref":"refs/heads/release"}"#, setup.base + "/hooks/gl?wait=30s"])
        #expect(gitlab.status == 200 && gitlab.json["phase"] as? String == "success", "\(gitlab.body)")
    }

    @Test("?wait= that runs out answers 202 with the run as it is then (a loop timer, not a sleeping task), and the run goes on")
    func waitRunsOut() throws {
        let setup = try Setup()
        let answer = try WebhookClient.post(setup.base + "/hooks/hold?wait=1s", scheme: "hmac-sha256", secret: setup.secret("ci"), body: "{}",
                                            in: setup.secrets)
        #expect(answer.status == 202 && answer.json["phase"] as? String == "loading", "\(answer.body)")
        let run = try #require(answer.run)
        #expect(try setup.daemon.baton("show", String(run)).stdout.contains(", loading"))
    }

    @Test("refusals: bad signature and stale timestamp 401 saying nothing more, unknown hook 404, GET 405, a big body 413, a slow client cut")
    func refusals() throws {
        let setup = try Setup()
        let wrong = try WebhookClient.curl(["-H", "X-Hub-Signature-256: sha256=" + String(repeating: "0", count: 64), "--data-binary", "{}", setup.base + "/hooks/gh"])
        #expect(wrong.status == 401 && wrong.body == #"{"error":"unauthorized"}"# + "\n", "\(wrong.body)")
        let stale = try WebhookClient.post(setup.base + "/hooks/ci", scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": 0}"#,
                                           skew: -600, in: setup.secrets)
        #expect(stale.status == 401 && stale.body == wrong.body, "\(stale.body)")
        let fresh = try WebhookClient.post(setup.base + "/hooks/ci", scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": 0}"#,
                                           skew: -60, in: setup.secrets)
        #expect(fresh.status == 202, "\(fresh.body)")
        #expect(try WebhookClient.curl(["--data-binary", "{}", setup.base + "/hooks/nope"]).status == 404)
        let accepted = try WebhookClient.curl(["-i", "-H", "X-Baton-Signature: " + SignatureScheme.batonSignature(Array("{}".utf8),
            secret: Secret(fileContent: Array(try Data(contentsOf: URL(fileURLWithPath: setup.secret("ci"))))), time: Int64(Date().timeIntervalSince1970)),
            "--data-binary", "{}", setup.base + "/hooks/hold"])
        #expect(accepted.status == 202 && accepted.body.hasPrefix("HTTP/1.1 202 Accepted\r\n"), "\(accepted.body)")
        let get = try WebhookClient.curl(["-i", setup.base + "/hooks/gh"])
        #expect(get.status == 405 && get.body.contains("Allow: POST"), "\(get.body)")
        let port = try WebhookClient.port(of: setup.daemon)
        // 1 MiB announced: refused from the head, before a byte of it is read.
        let big = try MetricsEndToEndTests.TCP.exchange(port, "POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
        #expect(big.hasPrefix("HTTP/1.1 413 "), "\(big)")
        // A slowloris client: half a head, then nothing; the listener's deadline ends it (408).
        let slow = try MetricsEndToEndTests.TCP(port: port)
        slow.send("POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Le")
        let started = ContinuousClock.now
        let cut = slow.readToEnd(seconds: 20)
        #expect(cut.hasPrefix("HTTP/1.1 408 "), "\(cut)")
        #expect(ContinuousClock.now - started < .seconds(10))
        // And one that sends its head but holds back the body it announced.
        let holding = try MetricsEndToEndTests.TCP(port: port)
        holding.send("POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        #expect(holding.readToEnd(seconds: 20).hasPrefix("HTTP/1.1 408 "))
        // A rate limit counts authenticated presses only: an outsider cannot use up the hook's budget.
        #expect(try WebhookClient.curl(["--data-binary", "{}", setup.base + "/hooks/limited"]).status == 401)
        let allowed = try WebhookClient.post(setup.base + "/hooks/limited", scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": 0}"#, in: setup.secrets)
        #expect(allowed.status == 202, "\(allowed.body)")
        let limited = try WebhookClient.curl(["-i", "-H", "X-Baton-Signature: t=1,v1=" + String(repeating: "0", count: 64), setup.base + "/hooks/limited", "--data-binary", "{}"])
        #expect(limited.status == 401)
        let past = try WebhookClient.post(setup.base + "/hooks/limited", scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": 0}"#, in: setup.secrets)
        #expect(past.status == 429, "\(past.body)")
        #expect(!setup.daemon.stderr.contains("gh-0123456789abcdef-secret"))
    }

    @Test("a reload rotates a hook's secret: the old one is refused from then on, the new one presses; an unreadable secret keeps the old config")
    func rotation() throws {
        let setup = try Setup()
        func press() throws -> WebhookClient.Answer {
            try WebhookClient.post(setup.base + "/hooks/ci", scheme: "hmac-sha256", secret: setup.secret("ci"), body: #"{"code": 0}"#, in: setup.secrets)
        }
        let old = try String(contentsOfFile: setup.secret("ci"), encoding: .utf8)
        #expect(try press().status == 202)
        try "ci-rotated-0123456789abcdef\n".write(toFile: setup.secret("ci"), atomically: true, encoding: .utf8)
        // Until the reload the listener holds the old secret: the sender's new one is refused.
        #expect(try press().status == 401)
        setup.daemon.signal(SIGHUP)
        try setup.daemon.waitForLog("reloaded")
        #expect(try press().status == 202)
        try old.write(toFile: setup.secrets + "/old.secret", atomically: true, encoding: .utf8)
        let stale = try WebhookClient.post(setup.base + "/hooks/ci", scheme: "hmac-sha256", secret: setup.secrets + "/old.secret", body: #"{"code": 0}"#,
                                           in: setup.secrets)
        #expect(stale.status == 401)
        try FileManager.default.removeItem(atPath: setup.secret("gl"))
        setup.daemon.signal(SIGHUP)
        try setup.daemon.waitForLog("reload refused")
        #expect(setup.daemon.stderr.contains("webhooks.hooks.gl.secret.file: cannot read the secret file"), "\(setup.daemon.stderr)")
        #expect(try press().status == 202)
        #expect(!setup.daemon.stderr.contains("ci-rotated") && !setup.daemon.stderr.contains("0123456789abcdef-secret"))
    }
}
