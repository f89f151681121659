import BatonCore
import BatonHooks
@testable import BatonIPC
import Foundation
import Testing

/// Issue 37, item 3: which authenticated deliveries press a hook's action, as one table through
/// the whole gate. A ping is answered pong, an event the hook does not take, a body that fails its
/// `when` and a param its action's pattern refuses are ignored (202); none makes a run.
@Suite("Hook rules")
struct HookRulesTests {
    typealias Gate = HookGateTests
    static let branches = try! ParamPattern("refs/heads/(main|release)")
    static let gate = HookGate(hooks: [
        "gh": hook("gh", .github, params: ["env": "/ref"], HookRules(events: ["push"], patterns: ["env": branches])),
        "main": hook("main", .github, params: ["env": "/ref"],
                     HookRules(events: ["push"], when: [.init(try! JSONPointer("/ref"), ["refs/heads/main"])], patterns: ["env": branches])),
        "merged": hook("merged", .github, HookRules(events: ["pull_request"], when: [.init(try! JSONPointer("/pull_request/merged"), ["true"]),
                                                                                      .init(try! JSONPointer("/number"), ["7", "8"])])),
        "all": hook("all", .github, HookRules(events: nil)),
        "gl": hook("gl", .gitlab, params: ["env": "/ref"], HookRules(events: ["push", "tag_push"], patterns: ["env": branches])),
        "ci": hook("ci", .hmacSHA256, HookRules(for: .hmacSHA256)),
        "nightly": hook("nightly", .hmacSHA256, HookRules(events: ["nightly"])),
    ], bodyLimit: 1_000)

    static func hook(_ name: String, _ scheme: SignatureScheme, params: [String: String] = [:], _ rules: HookRules) -> Hook {
        Hook(name: name, action: "deploy", secret: Gate.secret, signature: scheme, params: params.mapValues { try! JSONPointer($0) }, rules: rules)
    }

    /// What a request comes to.
    enum Outcome: Equatable, CustomStringConvertible {
        case run([String: String])
        case pong
        case ignored(HookRules.Reason)
        case status(Int)
        var description: String {
            switch self {
            case let .run(params): "run \(params)"
            case .pong: "pong"
            case let .ignored(reason): "ignored (\(reason))"
            case let .status(code): "\(code)"
            }
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var target: String
        /// The event's field and value, or nil for none.
        var event: [(String, String)]
        var body: String = #"{"ref":"refs/heads/main"}"#
        var signed = true
        var outcome: Outcome
        var testDescription: String { name }
    }

    /// The request, signed as its hook's scheme signs (or with a wrong signature).
    static func decide(_ row: Row) -> HookGate.Decision {
        let body = Array(row.body.utf8)
        let name = String(row.target.dropFirst("/hooks/".count).prefix { $0 != "?" })
        let signature: (String, String) = switch gate.hooks[name]!.signature {
        case .github: ("X-Hub-Signature-256", row.signed ? Gate.github(body) : "sha256=" + String(repeating: "0", count: 64))
        case .gitlab: ("X-Gitlab-Token", row.signed ? "It's a Secret to Everybody" : "guess")
        case .hmacSHA256: ("X-Baton-Signature", SignatureScheme.batonSignature(body, secret: row.signed ? Gate.secret : Secret([1]), time: Gate.now))
        }
        let head = Gate.head("POST", row.target, row.event + [signature, ("X-GitHub-Delivery", "d-1")], body: body)
        guard case let .read(route, _) = gate.route(head) else { return .answer(HookAnswer(status: 0, message: "route")) }
        return gate.decide(route, head, body: body, now: Gate.now)
    }

    static func outcome(_ decision: HookGate.Decision) -> Outcome {
        switch decision {
        case let .trigger(trigger): .run(trigger.params)
        case .pong: .pong
        case let .ignored(_, ignored): .ignored(ignored.reason)
        case let .answer(answer): .status(answer.status)
        case .status: .status(-1)
        }
    }

    static let github = "X-GitHub-Event", gitlab = "X-Gitlab-Event", baton = "X-Baton-Event"
    static let main = ["env": "refs/heads/main"]

    static let rows: [Row] = [
        // The order: signature, then the URL, then ping, events, when, params.
        Row(name: "a ping is pong, though the hook takes push only", target: "/hooks/gh", event: [(github, "ping")], body: #"{"zen":"Design for failure."}"#, outcome: .pong),
        Row(name: "an unsigned ping is 401: no rule shows before the signature", target: "/hooks/gh", event: [(github, "ping")], signed: false, outcome: .status(401)),
        Row(name: "an unsigned issues event is 401, not ignored", target: "/hooks/gh", event: [(github, "issues")], signed: false, outcome: .status(401)),
        Row(name: "a ping with a bad ?wait= is 400: a test delivery checks the URL", target: "/hooks/gh?wait=soon", event: [(github, "ping")], outcome: .status(400)),
        Row(name: "a push to main runs", target: "/hooks/gh", event: [(github, "push")], outcome: .run(main)),
        Row(name: "an issues event is ignored", target: "/hooks/gh", event: [(github, "issues")], outcome: .ignored(.event)),
        Row(name: "a star is ignored, its body not read as JSON", target: "/hooks/gh", event: [(github, "watch")], body: "payload=%7B%7D", outcome: .ignored(.event)),
        Row(name: "a request naming no event is not a push", target: "/hooks/gh", event: [], outcome: .ignored(.event)),
        Row(name: "two X-GitHub-Event fields name no one event", target: "/hooks/gh", event: [(github, "push"), (github, "push")], outcome: .ignored(.event)),
        Row(name: "Gitea's own field where X-GitHub-Event is missing", target: "/hooks/gh", event: [("X-Gitea-Event", "push")], outcome: .run(main)),
        Row(name: "a push to a branch the action's pattern refuses is ignored, not 400", target: "/hooks/gh", event: [(github, "push")],
            body: #"{"ref":"refs/heads/feature-x"}"#, outcome: .ignored(.param)),
        Row(name: "a branch with a line break goes to the press, whose check refuses it (400) as from any trigger", target: "/hooks/gh", event: [(github, "push")],
            body: #"{"ref":"refs/heads/x\ny"}"#, outcome: .run(["env": "refs/heads/x\ny"])),
        Row(name: "a push that is no JSON is still 400", target: "/hooks/gh", event: [(github, "push")], body: "ref=main", outcome: .status(400)),
        Row(name: "a push whose /ref is an object is still 400", target: "/hooks/gh", event: [(github, "push")], body: #"{"ref":{}}"#, outcome: .status(400)),
        Row(name: "when: a push to main runs", target: "/hooks/main", event: [(github, "push")], outcome: .run(main)),
        Row(name: "when: a push to release, which the pattern takes, is ignored", target: "/hooks/main", event: [(github, "push")],
            body: #"{"ref":"refs/heads/release"}"#, outcome: .ignored(.when)),
        Row(name: "when: a body without /ref is ignored", target: "/hooks/main", event: [(github, "push")], body: #"{"zen":"x"}"#, outcome: .ignored(.when)),
        Row(name: "when: an /ref that is an object is ignored", target: "/hooks/main", event: [(github, "push")], body: #"{"ref":{"a":1}}"#, outcome: .ignored(.when)),
        Row(name: "when: a body that is no JSON is 400", target: "/hooks/main", event: [(github, "push")], body: "x", outcome: .status(400)),
        Row(name: "when: a boolean and a number compared as text, every condition held", target: "/hooks/merged", event: [(github, "pull_request")],
            body: #"{"number":8,"pull_request":{"merged":true}}"#, outcome: .run([:])),
        Row(name: "when: one condition of two fails", target: "/hooks/merged", event: [(github, "pull_request")],
            body: #"{"number":9,"pull_request":{"merged":true}}"#, outcome: .ignored(.when)),
        Row(name: "when: false is not true", target: "/hooks/merged", event: [(github, "pull_request")],
            body: #"{"number":7,"pull_request":{"merged":false}}"#, outcome: .ignored(.when)),
        Row(name: "events *: an issues event runs", target: "/hooks/all", event: [(github, "issues")], outcome: .run([:])),
        Row(name: "events *: a request naming no event runs", target: "/hooks/all", event: [], outcome: .run([:])),
        Row(name: "events *: a ping is still pong", target: "/hooks/all", event: [(github, "ping")], outcome: .pong),
        Row(name: "GitLab's Push Hook is push", target: "/hooks/gl", event: [(gitlab, "Push Hook")], outcome: .run(main)),
        Row(name: "GitLab's Tag Push Hook is tag_push", target: "/hooks/gl", event: [(gitlab, "Tag Push Hook")],
            body: #"{"ref":"refs/heads/release"}"#, outcome: .run(["env": "refs/heads/release"])),
        Row(name: "GitLab's Merge Request Hook is ignored", target: "/hooks/gl", event: [(gitlab, "Merge Request Hook")], outcome: .ignored(.event)),
        Row(name: "GitLab's field on a GitHub hook names no event", target: "/hooks/gh", event: [(gitlab, "Push Hook")], outcome: .ignored(.event)),
        Row(name: "our own senders: no event, every request runs", target: "/hooks/ci", event: [], outcome: .run([:])),
        Row(name: "our own senders: X-Baton-Event ping is pong", target: "/hooks/ci", event: [(baton, "ping")], outcome: .pong),
        Row(name: "events [nightly]: nightly runs", target: "/hooks/nightly", event: [(baton, "nightly")], outcome: .run([:])),
        Row(name: "events [nightly]: weekly is ignored", target: "/hooks/nightly", event: [(baton, "weekly")], outcome: .ignored(.event)),
        Row(name: "events [nightly]: no event is ignored", target: "/hooks/nightly", event: [], outcome: .ignored(.event)),
        Row(name: "events [nightly]: an event that is no name is ignored", target: "/hooks/nightly", event: [(baton, "night/ly")], outcome: .ignored(.event)),
    ]

    static func row(_ name: String) -> Row { rows.first { $0.name == name }! }

    @Test("each delivery runs, is pong, is ignored or refused", arguments: rows)
    func decision(_ row: Row) {
        #expect(Self.outcome(Self.decide(row)) == row.outcome)
    }

    @Test("an ignored delivery's answer names what passed it over", arguments: [
        (row("an issues event is ignored"), "event issues is not one this hook takes (push)"),
        (row("a request naming no event is not a push"), "no X-GitHub-Event names the event; this hook takes push"),
        (row("a push to a branch the action's pattern refuses is ignored, not 400"), #"param env: "refs/heads/feature-x" does not match refs/heads/(main|release)"#),
        (row("when: a push to release, which the pattern takes, is ignored"), #"/ref is "refs/heads/release", not "refs/heads/main""#),
        (row("when: a body without /ref is ignored"), #"/ref is absent, not "refs/heads/main""#),
        (row("when: one condition of two fails"), #"/number is "9", not "7" or "8""#),
        (Row(name: "a line break in the body's value", target: "/hooks/main", event: [(github, "push")], body: #"{"ref":"refs/heads/x\nwebhook gh: run"}"#,
             outcome: .ignored(.when)), #"/ref is "refs/heads/x\nwebhook gh: run", not "refs/heads/main""#),
    ])
    func messages(_ row: Row, _ message: String) throws {
        guard case let .ignored(hook, ignored) = Self.decide(row) else { Issue.record("not ignored"); return }
        #expect(ignored.message == message)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(ignored.response.body)) as? [String: Any])
        #expect(ignored.response.status == 202 && hook == String(row.target.dropFirst(7).prefix { $0 != "?" }))
        #expect(body["ignored"] as? Bool == true && body["reason"] as? String == ignored.reason.rawValue && body["message"] as? String == message)
    }

    @Test("a pong names the hook and the events it takes")
    func pong() {
        #expect(String(decoding: Self.gate.hooks["gl"]!.rules.pong(hook: "gl").body, as: UTF8.self)
                == #"{"pong":true,"hook":"gl","events":["push","tag_push"]}"# + "\n")
        #expect(String(decoding: HookRules(events: nil).pong(hook: "ci").body, as: UTF8.self) == #"{"pong":true,"hook":"ci","events":["*"]}"# + "\n")
    }

    @Test("one spelling of an event: GitLab's words lower-cased, without Hook, joined by _", arguments: [
        ("Push Hook", "push"), ("Tag Push Hook", "tag_push"), ("Merge Request Hook", "merge_request"), ("System Hook", "system"),
        ("push", "push"), ("pull_request", "pull_request"), ("Hook", "hook"), ("PING", "ping"),
    ])
    func spelling(_ text: String, _ name: String) {
        #expect(DeliveryEvent.name(text) == name)
    }

    @Test("the defaults: a forge's pushes, every request of one's own")
    func defaults() {
        #expect(HookRules(for: .github).events == ["push"] && HookRules(for: .gitlab).events == ["push"])
        #expect(HookRules(for: .hmacSHA256).events == nil)
        #expect(Hook(name: "h", action: "a", secret: Gate.secret, signature: .gitlab).rules == HookRules(events: ["push"]))
    }
}
