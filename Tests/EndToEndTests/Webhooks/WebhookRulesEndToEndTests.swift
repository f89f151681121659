import BatonCore
import Foundation
import Testing

/// Issue 37, item 3 end to end: a real batond over HTTP answers a forge's ping `pong`, ignores
/// (202, no run, counted) the events a hook does not take, the bodies its `when` refuses and the
/// branches its action's pattern refuses, and runs the push it is for.
@Suite("End to end: webhook rules", .serialized, .offPool)
struct WebhookRulesEndToEndTests {
    /// The hooks: GitHub's with the default events (push) and one press an hour, GitLab's for
    /// pushes to main only.
    static func config(secrets: String, prefix: String = "") -> String {
        """
        { \(prefix) socketMode: "0666", shutdownGrace: "1s", metrics: { listen: "127.0.0.1:0" },
          webhooks: { listen: "127.0.0.1:0", hooks: {
            gh: { action: "deploy", secret: { file: "\(secrets)/gh.secret" }, signature: "github", params: { env: "/ref" },
                  rateLimit: { requests: 1, per: "1h" } },
            gl: { action: "deploy", secret: { file: "\(secrets)/gl.secret" }, signature: "gitlab", params: { env: "/ref" },
                  events: ["Push Hook"], when: { "/ref": "refs/heads/main" } } } },
          actions: { deploy: { exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"], policy: "queue",
                               params: { env: { pattern: "refs/heads/(main|release)" } } } } }
        """
    }

    static func secrets() throws -> String {
        let directory = NSTemporaryDirectory() + "baton-hook-rules-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in ["gh", "gl"] {
            FileManager.default.createFile(atPath: "\(directory)/\(name).secret", contents: Data("\(name)-0123456789abcdef-secret\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        }
        return directory
    }

    /// A GitHub delivery of `event` with `body`, through urllib.
    static func github(_ base: String, _ event: String, delivery: String, ref: String, secrets: String) throws -> WebhookClient.Answer {
        try WebhookClient.post(base + "/hooks/gh", scheme: "github", secret: secrets + "/gh.secret", body: #"{"ref":"\#(ref)","zen":"Half measures are as bad as nothing at all."}"#,
                               headers: ["X-GitHub-Event": event, "X-GitHub-Delivery": delivery], in: secrets)
    }

    /// The runs of deploy in the history.
    static func runs(_ daemon: Daemon) throws -> Int {
        try daemon.baton("history", "--action", "deploy", "--json").stdout.components(separatedBy: "\"id\"").count - 1
    }

    @Test("GitHub: ping is 200 pong, issues and a push to a branch deploy refuses are 202 ignored (again when redelivered, not rate limited), a push to main runs")
    func github() throws {
        let secrets = try Self.secrets()
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let daemon = try Daemon(config: Self.config(secrets: secrets))
        let base = "http://127.0.0.1:\(try WebhookClient.port(of: daemon))"
        let ping = try Self.github(base, "ping", delivery: "p-1", ref: "", secrets: secrets)
        #expect(ping.status == 200 && ping.body == #"{"pong":true,"hook":"gh","events":["push"]}"# + "\n", "\(ping.body)")
        let issues = try Self.github(base, "issues", delivery: "i-1", ref: "refs/heads/main", secrets: secrets)
        #expect(issues.status == 202 && issues.run == nil && issues.json["ignored"] as? Bool == true && issues.json["reason"] as? String == "event", "\(issues.body)")
        #expect(issues.json["message"] as? String == "event issues is not one this hook takes (push)", "\(issues.body)")
        for _ in 1...2 {
            // The forge redelivers what it was answered 202 for only by hand; ignored again, still no run.
            let feature = try Self.github(base, "push", delivery: "f-1", ref: "refs/heads/feature", secrets: secrets)
            #expect(feature.status == 202 && feature.run == nil && feature.json["reason"] as? String == "param", "\(feature.body)")
            #expect(feature.body.contains(#"param env: \"refs/heads/feature\" does not match refs/heads/(main|release)"#), "\(feature.body)")
        }
        #expect(try Self.runs(daemon) == 0)
        let main = try WebhookClient.post(base + "/hooks/gh?wait=30s", scheme: "github", secret: secrets + "/gh.secret", body: #"{"ref":"refs/heads/main"}"#,
                                          headers: ["X-GitHub-Event": "push", "X-GitHub-Delivery": "m-1"], in: secrets)
        #expect(main.status == 200 && main.json["phase"] as? String == "success", "\(main.body)")
        #expect(try Self.runs(daemon) == 1)
        // The pings and ignored deliveries used none of the hour's one press: the push had it, the next is 429.
        let next = try Self.github(base, "push", delivery: "m-2", ref: "refs/heads/main", secrets: secrets)
        #expect(next.status == 429, "\(next.body)")
        #expect(daemon.stderr.contains("webhook gh from 127.0.0.1, delivery i-1: ignored, event issues is not one this hook takes (push)"), "\(daemon.stderr)")
        #expect(daemon.stderr.contains("webhook gh from 127.0.0.1, delivery p-1: ping, answered pong"), "\(daemon.stderr)")
        let metrics = try MetricsEndToEndTests.TCP.exchange(try MetricsEndToEndTests.port(of: daemon), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        for sample in [#"baton_webhook_requests_total{hook="gh",code="200"} 2"#, #"baton_webhook_requests_total{hook="gh",code="202"} 3"#,
                       #"baton_webhook_ignored_total{hook="gh",reason="event"} 1"#, #"baton_webhook_ignored_total{hook="gh",reason="param"} 2"#] {
            #expect(metrics.contains(sample), "\(sample) in \(metrics)")
        }
    }

    @Test("GitLab: an Issue Hook and a Push Hook to release (the pattern takes it, when does not) are ignored; a Push Hook to main runs")
    func gitlab() throws {
        let secrets = try Self.secrets()
        defer { try? FileManager.default.removeItem(atPath: secrets) }
        let daemon = try Daemon(config: Self.config(secrets: secrets))
        let base = "http://127.0.0.1:\(try WebhookClient.port(of: daemon))"
        func gitlab(_ event: String, _ ref: String) throws -> WebhookClient.Answer {
            try WebhookClient.curl(["-H", "X-Gitlab-Token: gl-0123456789abcdef-secret", "-H", "X-Gitlab-Event: \(event)",
                                    "--data-binary", #"{"object_kind":"push","ref":"\#(ref)"}"#, base + "/hooks/gl?wait=30s"])
        }
        let issue = try gitlab("Issue Hook", "refs/heads/main")
        #expect(issue.status == 202 && issue.json["reason"] as? String == "event" && issue.body.contains("event issue is not one"), "\(issue.body)")
        let release = try gitlab("Push Hook", "refs/heads/release")
        #expect(release.status == 202 && release.json["reason"] as? String == "when", "\(release.body)")
        #expect(release.json["message"] as? String == #"/ref is "refs/heads/release", not "refs/heads/main""#, "\(release.body)")
        #expect(try Self.runs(daemon) == 0)
        let main = try gitlab("Push Hook", "refs/heads/main")
        #expect(main.status == 200 && main.json["phase"] as? String == "success", "\(main.body)")
        #expect(try Self.runs(daemon) == 1)
        let metrics = try MetricsEndToEndTests.TCP.exchange(try MetricsEndToEndTests.port(of: daemon), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(metrics.contains(#"baton_webhook_ignored_total{hook="gl",reason="event"} 1"#) && metrics.contains(#"baton_webhook_ignored_total{hook="gl",reason="when"} 1"#),
                "\(metrics)")
    }
}
