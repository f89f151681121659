import Foundation
import Testing

/// The README's "Pressed from CI" section, run as it is written: its config (with a temporary
/// directory for /etc/baton/hooks, a free port, and an action that echoes), its setup commands
/// (without sudo and systemctl), its by-hand GitHub request and its GitLab job's curl line.
@Suite("End to end: the README's webhook examples", .serialized, .offPool)
struct WebhookReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardizedFileURL.path

    /// The fenced blocks of the section, by their language.
    static func blocks() throws -> [(language: String, text: String)] {
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let start = try #require(readme.range(of: "## Pressed from CI\n"))
        let section = readme[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var blocks: [(String, String)] = []
        var language: String?, lines: [Substring] = []
        for line in section[..<end].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if let open = language { blocks.append((open, lines.joined(separator: "\n"))); language = nil; lines = [] }
                else { language = String(line.dropFirst(3)) }
            } else if language != nil {
                lines.append(line)
            }
        }
        return blocks
    }

    @Test("the config, the secrets, GitHub's request by hand and the GitLab job work as shown")
    func readme() throws {
        let blocks = try Self.blocks()
        let config = try #require(blocks.first { $0.language == "json5" }?.text)
        let setup = try #require(blocks.first { $0.language == "sh" && $0.text.contains("openssl rand") }?.text)
        let byHand = try #require(blocks.first { $0.language == "sh" && $0.text.contains("curl") }?.text)
        let job = try #require(blocks.first { $0.language == "yaml" }?.text.split(separator: "\n").first { $0.contains("- curl") })
        let hooks = NSTemporaryDirectory() + "baton-readme-" + UUID().uuidString + "/hooks"
        defer { try? FileManager.default.removeItem(atPath: hooks + "/..") }
        func local(_ text: String) -> String {
            text.replacingOccurrences(of: "sudo ", with: "").replacingOccurrences(of: "/etc/baton/hooks", with: hooks)
        }
        // The setup, but for the check and the reload, which the daemon below stands in for.
        let steps = local(setup).split(separator: "\n").filter { !$0.contains("--check-config") }.joined(separator: "\n")
        let made = try execute("/bin/sh", ["-ec", "mkdir -p \(hooks)/..\n" + steps])
        #expect(made.code == 0, "\(made.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: hooks + "/github.secret")[.posixPermissions] as? Int == 0o600)
        let daemonConfig = local(config).replacingOccurrences(of: "127.0.0.1:9470", with: "127.0.0.1:0")
            .replacingOccurrences(of: #"exec: ["/usr/local/bin/deploy"]"#, with: #"exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"]"#)
        try daemonConfig.write(toFile: hooks + "/../baton.json5", atomically: true, encoding: .utf8)
        let checked = try execute(Binaries.batond, ["--check-config", hooks + "/../baton.json5"])
        #expect(checked.code == 0, "\(checked.stdout) \(checked.stderr)")
        let daemon = try Daemon(config: daemonConfig)
        let address = "127.0.0.1:\(try WebhookClient.port(of: daemon))"
        let github = try execute("/bin/sh", ["-ec", local(byHand).replacingOccurrences(of: "127.0.0.1:9470", with: address)])
        #expect(github.code == 0 && github.stdout.contains(#""phase":"success""#) && github.stdout.contains(#""status":"/hooks/github-deploy/runs/"#),
                "\(github.stdout) \(github.stderr)")
        let token = try String(contentsOfFile: hooks + "/gitlab.secret", encoding: .utf8).trimmingCharacters(in: .newlines)
        let line = String(job.drop { $0 == " " }.dropFirst(2)).replacingOccurrences(of: "https://ci.example.org", with: "http://" + address)
        let gitlab = try execute("/bin/sh", ["-ec", line], environment: ["BATON_HOOK_TOKEN": token, "CI_COMMIT_BRANCH": "release"])
        #expect(gitlab.code == 0 && gitlab.stdout.contains(#""phase":"success""#), "\(gitlab.stdout) \(gitlab.stderr)")
        // A branch the action's pattern refuses is ignored: 202, no run, and the job passes (issue 37).
        let refused = try execute("/bin/sh", ["-ec", line], environment: ["BATON_HOOK_TOKEN": token, "CI_COMMIT_BRANCH": "feature"])
        #expect(refused.code == 0 && refused.stdout.contains(#""ignored":true,"reason":"param""#), "\(refused.stdout) \(refused.stderr)")
        // GitHub's ping, and an event the hook does not take, sent as the by-hand request is.
        let request = local(byHand).replacingOccurrences(of: "127.0.0.1:9470", with: address)
        let ping = try execute("/bin/sh", ["-ec", request.replacingOccurrences(of: "X-GitHub-Event: push", with: "X-GitHub-Event: ping")])
        #expect(ping.stdout.hasPrefix(#"{"pong":true,"hook":"github-deploy","events":["push"]}"#), "\(ping.stdout) \(ping.stderr)")
        let issues = try execute("/bin/sh", ["-ec", request.replacingOccurrences(of: "X-GitHub-Event: push", with: "X-GitHub-Event: issues")])
        #expect(issues.stdout.hasPrefix(#"{"ignored":true,"reason":"event","message":"event issues is not one this hook takes (push)"}"#),
                "\(issues.stdout) \(issues.stderr)")
        // The project webhook deploys pushes to main only; its GitLab-sent event names a push.
        let gitlabHook = #"curl -sS -H "X-Gitlab-Token: $BATON_HOOK_TOKEN" -H 'X-Gitlab-Event: Push Hook' --data-binary '{"ref":"refs/heads/release"}' "#
            + "http://\(address)/hooks/gitlab-deploy"
        let release = try execute("/bin/sh", ["-ec", gitlabHook], environment: ["BATON_HOOK_TOKEN": token])
        #expect(release.stdout.contains(#""reason":"when""#), "\(release.stdout) \(release.stderr)")
        let runs = try daemon.baton("history", "--action", "deploy", "--json").stdout
        #expect(runs.components(separatedBy: "\"id\"").count == 3, "\(runs)")
    }
}
