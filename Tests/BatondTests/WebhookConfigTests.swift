@testable import batond
import BatonCore
import BatonHooks
import BatonIPC
import Foundation
import Testing

@Suite("Config: webhooks")
struct WebhookConfigTests {
    /// A directory with a secret file (mode 0600) for each test.
    final class Secrets {
        let directory = NSTemporaryDirectory() + "baton-hooks-\(UUID().uuidString)"
        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try write("gh.secret", "It's a Secret to Everybody\n", mode: 0o600)
        }
        func write(_ name: String, _ text: String, mode: Int) throws {
            FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    static let actions = #"actions: { deploy: { exec: ["true"], params: { env: { pattern: "refs/heads/[a-z]+" } } }, plain: { exec: ["true"] } }"#

    func parse(_ webhooks: String) throws -> Config {
        try Config.parse(Data("{ \(Self.actions), webhooks: \(webhooks) }".utf8), file: "t.json5")
    }

    func problems(_ webhooks: String) -> [String] {
        BatondTests.problems("{ \(Self.actions), webhooks: \(webhooks) }")
    }

    @Test("a GitHub hook: its action, secret (without the file's line end), scheme and pointer")
    func github() throws {
        let secrets = try Secrets()
        let config = try parse(#"{ listen: "127.0.0.1:9470", trustedProxies: ["127.0.0.1", "::1"], hooks: { "github-deploy": { action: "deploy", secret: { file: "\#(secrets.directory)/gh.secret" }, signature: "github", params: { env: "/ref" }, rateLimit: { requests: 30, per: "1m" } } } }"#)
        let webhooks = try #require(config.webhooks)
        #expect(webhooks.listen.description == "127.0.0.1:9470")
        #expect(webhooks.trustedProxies == ["127.0.0.1", "::1"])
        #expect(webhooks.proxyUsers.isEmpty && webhooks.keptPeers == [.unknown])
        #expect(webhooks.hooks["github-deploy"] == Hook(name: "github-deploy", action: "deploy", secret: Secret(Array("It's a Secret to Everybody".utf8)),
                                                        signature: .github, params: ["env": try JSONPointer("/ref")],
                                                        rateLimit: .init(requests: 30, per: .seconds(60)),
                                                        rules: HookRules(events: ["push"], patterns: ["env": try ParamPattern("refs/heads/[a-z]+")])))
        #expect(webhooks.maxBody == 256 << 10)
    }

    @Test("a proxy on this host named by its user (or uid): its XFF is believed and the port's reserve is kept for it, with the peers on other hosts")
    func proxyUsers() throws {
        let config = try parse(#"{ listen: "127.0.0.1:9470", trustedProxies: ["127.0.0.1", "user:root", "user:4242"], hooks: {} }"#)
        let webhooks = try #require(config.webhooks)
        #expect(webhooks.trustedProxies == ["127.0.0.1"])
        #expect(webhooks.proxyUsers == [0, 4242])
        #expect(webhooks.keptPeers == [.unknown, .uid(0), .uid(4242)])
    }

    @Test("each problem names its field, and never holds the secret", arguments: [
        (#"{ hooks: {} }"#, "webhooks.listen: missing"),
        (#"{ listen: "127.0.0.1:9470" }"#, "webhooks.hooks: missing"),
        (#"{ listen: "127.0.0.1:9470", trustedProxies: ["10.0.0.0/8"], hooks: {} }"#, "webhooks.trustedProxies[0]: expected a numeric"),
        (#"{ listen: "127.0.0.1:9470", trustedProxies: ["127.0.0.1", "user:no-such-user-here"], hooks: {} }"#, "webhooks.trustedProxies[1]: no user named \"no-such-user-here\""),
        (#"{ listen: "127.0.0.1:9470", trustedProxies: ["www-data"], hooks: {} }"#, "webhooks.trustedProxies[0]: expected a numeric IPv4 or IPv6 address, or \"user:NAME\""),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "nope", secret: { file: "DIR/gh.secret" }, signature: "github" } } }"#, "webhooks.hooks.h.action: no action named \"nope\""),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", params: { branch: "/ref" } } } }"#, "webhooks.hooks.h.params.branch: action deploy has no param branch (it takes: env)"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "plain", secret: { file: "DIR/gh.secret" }, signature: "github", params: { env: "/ref" } } } }"#, "webhooks.hooks.h.params.env: action plain has no param env (it takes none)"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", params: { env: "ref" } } } }"#, "webhooks.hooks.h.params.env: a JSON Pointer starts with"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", params: { env: "/a~2" } } } }"#, "webhooks.hooks.h.params.env: \"~\" in a JSON Pointer"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/missing" }, signature: "github" } } }"#, "webhooks.hooks.h.secret.file: cannot read the secret file DIR/missing: No such file or directory"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR" }, signature: "github" } } }"#, "webhooks.hooks.h.secret.file: the secret file DIR is not a regular file"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/short" }, signature: "github" } } }"#, "webhooks.hooks.h.secret.file: the secret in DIR/short is 5 bytes"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: "It's a Secret to Everybody", signature: "github" } } }"#, "webhooks.hooks.h.secret: a secret is never written in the config"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret", credential: "x" }, signature: "github" } } }"#, "webhooks.hooks.h.secret: expected exactly one of"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { credential: "../x" }, signature: "github" } } }"#, "webhooks.hooks.h.secret.credential: a credential name is a file name"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "sha1" } } }"#, "webhooks.hooks.h.signature:"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" } } } }"#, "webhooks.hooks.h.signature: missing"),
        (#"{ listen: "127.0.0.1:9470", hooks: { "a/b": { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github" } } }"#, "webhooks.hooks.a/b: a hook name is"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", rateLimit: { requests: 0, per: "1m" } } } }"#, "webhooks.hooks.h.rateLimit.requests:"),
        (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", extra: 1 } } }"#, "webhooks.hooks.h.extra:"),
    ] + Self.ruleProblems)
    func problem(_ webhooks: String, _ expected: String) throws {
        let secrets = try Secrets()
        try secrets.write("short", "short", mode: 0o600)
        let found = problems(webhooks.replacingOccurrences(of: "DIR", with: secrets.directory))
        let wanted = expected.replacingOccurrences(of: "DIR", with: secrets.directory)
        #expect(found.contains { $0.hasPrefix(wanted) }, "\(found)")
        #expect(!found.joined().contains("Secret to Everybody") || webhooks.contains("secret: \"It's"), "\(found)")
    }

    /// `events` and `when`, each wrong in one way, on a GitHub hook.
    static let ruleProblems: [(String, String)] = [
        (#"events: ["ping"]"#, "webhooks.hooks.h.events[0]: ping is always answered pong and never presses the action"),
        (#"events: []"#, "webhooks.hooks.h.events: an empty list takes no event"),
        (#"events: ["*", "push"]"#, "webhooks.hooks.h.events: \"*\" takes every request: list it alone"),
        (#"events: ["push!"]"#, "webhooks.hooks.h.events[0]: \"push!\" is not an event name"),
        (#"events: ["push", "Push Hook"]"#, "webhooks.hooks.h.events[1]: \"Push Hook\" is listed twice (as push)"),
        (#"events: "push""#, "webhooks.hooks.h.events: expected an array of strings"),
        (#"when: "refs/heads/main""#, "webhooks.hooks.h.when: expected an object of JSON Pointers and values"),
        (#"when: { ref: "refs/heads/main" }"#, "webhooks.hooks.h.when.ref: a JSON Pointer starts with \"/\""),
        (#"when: { "/ref": [] }"#, "webhooks.hooks.h.when./ref: an empty list matches nothing"),
        (#"when: { "/ref": { name: "main" } }"#, "webhooks.hooks.h.when./ref: expected a string, a whole number or a boolean, got"),
        (#"when: { "/ref": ["refs/heads/main", null] }"#, "webhooks.hooks.h.when./ref[1]: expected a string, a whole number or a boolean"),
    ].map { (#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "deploy", secret: { file: "DIR/gh.secret" }, signature: "github", "# + $0.0 + " } } }", $0.1) }

    @Test("events and when: GitLab's spelling and ours are one name, \"*\" is every request, a condition takes a value or a list; the defaults by scheme")
    func rules() throws {
        let secrets = try Secrets()
        let secret = #"secret: { file: "\#(secrets.directory)/gh.secret" }"#
        let config = try parse(#"{ listen: "127.0.0.1:9470", hooks: { "#
            + #"gl: { action: "deploy", \#(secret), signature: "gitlab", params: { env: "/ref" }, events: ["Push Hook", "tag_push"], "#
            + #"when: { "/ref": "refs/heads/main", "/project/path_with_namespace": ["a/b", "a/c"], "/checkout_sha~1x": true, "/total_commits_count": 1 } }, "#
            + #"gh: { action: "plain", \#(secret), signature: "github" }, all: { action: "plain", \#(secret), signature: "github", events: ["*"] }, "#
            + #"own: { action: "plain", \#(secret), signature: "hmac-sha256" }, nightly: { action: "plain", \#(secret), signature: "hmac-sha256", events: ["nightly"] } } }"#)
        let hooks = try #require(config.webhooks?.hooks)
        #expect(hooks["gl"]?.rules == HookRules(events: ["push", "tag_push"], when: [
            HookRules.Condition(try JSONPointer("/checkout_sha~1x"), ["true"]), HookRules.Condition(try JSONPointer("/project/path_with_namespace"), ["a/b", "a/c"]),
            HookRules.Condition(try JSONPointer("/ref"), ["refs/heads/main"]), HookRules.Condition(try JSONPointer("/total_commits_count"), ["1"]),
        ], patterns: ["env": try ParamPattern("refs/heads/[a-z]+")]))
        #expect(hooks["gh"]?.rules == HookRules(events: ["push"]))
        #expect(hooks["all"]?.rules == HookRules(events: nil))
        #expect(hooks["own"]?.rules == HookRules(events: nil))
        #expect(hooks["nightly"]?.rules == HookRules(events: ["nightly"]))
    }

    @Test("a secret readable by every user is taken with a warning")
    func worldReadable() throws {
        let secrets = try Secrets()
        try secrets.write("open.secret", "0123456789abcdef0123", mode: 0o644)
        let config = try parse(#"{ listen: "127.0.0.1:9470", hooks: { h: { action: "plain", secret: { file: "\#(secrets.directory)/open.secret" }, signature: "gitlab" } } }"#)
        #expect(config.webhooks?.hooks["h"]?.secret.bytes == Array("0123456789abcdef0123".utf8))
        #expect(config.warnings.contains { $0.contains("webhooks.hooks.h.secret.file: the secret file") && $0.contains("readable by every user") })
    }

    @Test("a credential is read from $CREDENTIALS_DIRECTORY, and refused without one")
    func credential() throws {
        let secrets = try Secrets()
        var reader = ConfigReader()
        reader.credentialsDirectory = secrets.directory
        #expect(reader.secret(.object(["credential": .string("gh.secret")]), at: "s") == Secret(Array("It's a Secret to Everybody".utf8)))
        #expect(reader.problems.isEmpty)
        reader.credentialsDirectory = nil
        #expect(reader.secret(.object(["credential": .string("gh.secret")]), at: "s") == nil)
        #expect(reader.problems.map(\.message).first?.hasPrefix("$CREDENTIALS_DIRECTORY is not set") == true)
    }
}
