import BatonHooks
@testable import BatonIPC
import Foundation
import Testing

/// The hook decision as tables: each refusal has its status, and before authentication its
/// body says nothing but the status.
@Suite("Hook gate")
struct HookGateTests {
    static let secret = Secret(Array("It's a Secret to Everybody".utf8))
    static let now: Int64 = 1_764_600_000
    static let gate = HookGate(hooks: [
        "gh": Hook(name: "gh", action: "deploy", secret: secret, signature: .github, params: ["env": try! JSONPointer("/ref")]),
        "gl": Hook(name: "gl", action: "deploy", secret: secret, signature: .gitlab, params: ["env": try! JSONPointer("/ref")]),
        "ci": Hook(name: "ci", action: "backup", secret: secret, signature: .hmacSHA256),
    ], bodyLimit: 1_000)
    static let push = Array(#"{"ref":"refs/heads/main","before":"0000","after":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","repository":{"full_name":"octo-org/octo-repo"}}"#.utf8)

    static func head(_ method: String, _ target: String, _ fields: [(String, String)], body: [UInt8] = []) -> HTTPRequestHead {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: hooks.example\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        if method == "POST" { text += "Content-Length: \(body.count)\r\n" }
        guard case let .head(head, _) = HTTPRequestHead.parse(Array((text + "\r\n").utf8)) else { fatalError("bad test head \(text)") }
        return head
    }

    static func github(_ body: [UInt8], secret: Secret = secret) -> String {
        "sha256=" + HMAC.hex(HMAC.sha256(key: secret.bytes, message: body))
    }

    /// The whole decision: the head's, then (when it passes) the body's.
    static func decide(_ head: HTTPRequestHead, _ body: [UInt8], now: Int64 = now) -> HookGate.Decision {
        switch gate.route(head) {
        case let .answer(answer): .answer(answer)
        case let .read(route, length):
            length == body.count ? gate.decide(route, head, body: body, now: now) : .answer(HookAnswer(status: 0, message: "length"))
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var method = "POST"
        var target: String
        var fields: [(String, String)] = []
        var body: [UInt8] = []
        var now: Int64 = HookGateTests.now
        var status: Int
        var testDescription: String { name }
    }

    static let pushFields = [("X-GitHub-Event", "push"), ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"), ("X-Hub-Signature-256", github(push))]
    static let stamped = SignatureScheme.batonSignature(push, secret: secret, time: now)

    static let refusals: [Row] = [
        Row(name: "unknown hook", target: "/hooks/nope", fields: pushFields, body: push, status: 404),
        Row(name: "outside /hooks", target: "/deploy", fields: pushFields, body: push, status: 404),
        Row(name: "below a hook, not a status URL", target: "/hooks/gh/other", fields: pushFields, body: push, status: 404),
        Row(name: "a status URL with no run number", method: "GET", target: "/hooks/gh/runs/x", status: 404),
        Row(name: "a status URL with a leading zero", method: "GET", target: "/hooks/gh/runs/01", status: 404),
        Row(name: "GET on a hook", method: "GET", target: "/hooks/gh", status: 405),
        Row(name: "PUT on a hook", method: "PUT", target: "/hooks/gh", status: 405),
        Row(name: "POST on a status URL", target: "/hooks/gh/runs/3", body: [], status: 405),
        Row(name: "a body over the limit", target: "/hooks/gh", fields: pushFields, body: .init(repeating: 32, count: 1_001), status: 413),
        Row(name: "no signature", target: "/hooks/gh", body: push, status: 401),
        Row(name: "a signature of another body", target: "/hooks/gh", fields: [("X-Hub-Signature-256", github(push + [32]))], body: push, status: 401),
        Row(name: "a signature under another secret", target: "/hooks/gh", fields: [("X-Hub-Signature-256", github(push, secret: Secret([1])))], body: push, status: 401),
        Row(name: "two signatures, one right", target: "/hooks/gh",
            fields: [("X-Hub-Signature-256", github(push)), ("X-Hub-Signature-256", github([]))], body: push, status: 401),
        Row(name: "a signature without sha256=", target: "/hooks/gh", fields: [("X-Hub-Signature-256", String(github(push).dropFirst(7)))], body: push, status: 401),
        Row(name: "the SHA-1 signature alone", target: "/hooks/gh", fields: [("X-Hub-Signature", "sha1=" + String(repeating: "0", count: 40))], body: push, status: 401),
        Row(name: "a truncated signature", target: "/hooks/gh", fields: [("X-Hub-Signature-256", String(github(push).dropLast(2)))], body: push, status: 401),
        Row(name: "a wrong GitLab token", target: "/hooks/gl", fields: [("X-Gitlab-Token", "It's a Secret to Everybod")], body: push, status: 401),
        Row(name: "a GitHub signature on a GitLab hook", target: "/hooks/gl", fields: pushFields, body: push, status: 401),
        Row(name: "a stale timestamp", target: "/hooks/ci", fields: [("X-Baton-Signature", stamped)], body: push, now: now + 301, status: 401),
        Row(name: "a timestamp from the future", target: "/hooks/ci", fields: [("X-Baton-Signature", stamped)], body: push, now: now - 301, status: 401),
        Row(name: "a timestamp changed after signing", target: "/hooks/ci",
            fields: [("X-Baton-Signature", stamped.replacingOccurrences(of: "t=\(now)", with: "t=\(now + 1)"))], body: push, status: 401),
        Row(name: "a status read with a token of another run", method: "GET", target: "/hooks/gh/runs/4",
            fields: [("Authorization", "Bearer " + gate.hooks["gh"]!.statusToken(run: 3))], status: 401),
        Row(name: "a status read with no token", method: "GET", target: "/hooks/gh/runs/4", status: 401),
    ]

    @Test("refusals", arguments: refusals)
    func refusal(_ row: Row) {
        let decision = Self.decide(Self.head(row.method, row.target, row.fields, body: row.body), row.body, now: row.now)
        guard case let .answer(answer) = decision else { Issue.record("served: \(decision)"); return }
        #expect(answer.status == row.status)
        if [401, 404, 405, 413].contains(row.status) {
            // Says the status and no more: never which part failed, nor what was expected.
            let body = String(decoding: answer.response.body, as: UTF8.self)
            #expect(!body.contains("sha256") && !body.contains("signature") && !body.contains("token") && !body.contains("expected"))
            #expect(body.count < 40)
        }
    }

    @Test("every 401 is the same answer, whatever failed")
    func unauthorizedIsOne() {
        let answers = Self.refusals.filter { $0.status == 401 }.map {
            Self.decide(Self.head($0.method, $0.target, $0.fields, body: $0.body), $0.body, now: $0.now)
        }
        #expect(Set(answers.map { "\($0)" }).count == 1)
        #expect(answers.first == .answer(.unauthorized))
    }

    @Test("a GitHub push presses the hook's action with env from /ref and its delivery id")
    func githubPush() {
        let decision = Self.decide(Self.head("POST", "/hooks/gh", Self.pushFields, body: Self.push), Self.push)
        #expect(decision == .trigger(HookTrigger(hook: "gh", action: "deploy", params: ["env": "refs/heads/main"],
                                                 delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958")))
    }

    @Test("a GitLab token, ?wait= and an Idempotency-Key")
    func gitlab() {
        let head = Self.head("POST", "/hooks/gl?wait=30s", [("X-Gitlab-Token", "It's a Secret to Everybody"), ("X-Gitlab-Event", "Push Hook"),
                                                            ("Idempotency-Key", "k1")], body: Self.push)
        #expect(Self.decide(head, Self.push) == .trigger(HookTrigger(hook: "gl", action: "deploy", params: ["env": "refs/heads/main"],
                                                                       delivery: "k1", wait: .seconds(30))))
    }

    @Test("a delivery id is visible ASCII without spaces: invalid UTF-8, spaces, controls and text past 200 bytes are refused (400)",
          arguments: ["q\u{FFFD}", "x from 10.9.9.9 (uid 0 root)", "tab\there", "é", String(repeating: "a", count: 201)])
    func deliveryIDs(_ id: String) {
        let head = Self.head("POST", "/hooks/gl", [("X-Gitlab-Token", "It's a Secret to Everybody"), ("Idempotency-Key", id)], body: Self.push)
        guard case let .answer(answer) = Self.decide(head, Self.push) else {
            Issue.record("\(id.debugDescription) was taken")
            return
        }
        #expect(answer.status == 400)
    }

    @Test("a timestamped signature within five minutes either way", arguments: [-300, 0, 300] as [Int64])
    func stampedWindow(_ skew: Int64) {
        let head = Self.head("POST", "/hooks/ci", [("X-Baton-Signature", Self.stamped)], body: Self.push)
        #expect(Self.decide(head, Self.push, now: Self.now + skew) == .trigger(HookTrigger(hook: "ci", action: "backup")))
    }

    @Test("the status URL opens with the run's token, or the hook's signature over an empty body")
    func status() {
        let token = Self.head("GET", "/hooks/gh/runs/7", [("Authorization", "Bearer " + Self.gate.hooks["gh"]!.statusToken(run: 7))])
        #expect(Self.decide(token, []) == .status(hook: "gh", action: "deploy", run: 7))
        let signed = Self.head("GET", "/hooks/gh/runs/7", [("X-Hub-Signature-256", Self.github([]))])
        #expect(Self.decide(signed, []) == .status(hook: "gh", action: "deploy", run: 7))
    }

    @Test("after authentication a 400 may say what is wrong", arguments: [
        ("/hooks/gh?wait=soon", HookGateTests.push, "wait takes a duration"), ("/hooks/gh?other=1", HookGateTests.push, "the only query"),
        ("/hooks/gh", Array("ref=main".utf8), "not JSON"), ("/hooks/gh", Array(#"{"ref": {"name": "main"}}"#.utf8), "param env: /ref"),
    ])
    func badRequest(_ target: String, _ body: [UInt8], _ message: String) {
        let decision = Self.decide(Self.head("POST", target, [("X-GitHub-Event", "push"), ("X-Hub-Signature-256", Self.github(body))], body: body), body)
        guard case let .answer(answer) = decision else { Issue.record("served: \(decision)"); return }
        #expect(answer.status == 400)
        #expect(answer.message.contains(message))
    }

    @Test("a param the payload lacks is left to the action's default or its required error")
    func missingParam() {
        let body = Array(#"{"zen": "Keep it logically awesome."}"#.utf8)
        let decision = Self.decide(Self.head("POST", "/hooks/gh", [("X-GitHub-Event", "push"), ("X-Hub-Signature-256", Self.github(body))], body: body), body)
        #expect(decision == .trigger(HookTrigger(hook: "gh", action: "deploy")))
    }

    @Test("a hook's secret never shows in its description")
    func secretHidden() {
        #expect(!"\(Self.gate.hooks["gh"]!)".contains("Secret to"))
        #expect("\(Self.secret)" == "(secret)")
        #expect(Secret(fileContent: Array("s3cret\r\n".utf8)).bytes == Array("s3cret".utf8))
        #expect(Secret(fileContent: Array("s3cret\n\n".utf8)).bytes == Array("s3cret\n".utf8))
    }
}

@Suite("Hook rate limit")
struct RateLimiterTests {
    @Test("a bucket of three takes three at once, then one per period over three, with Retry-After")
    func bucket() {
        var limiter = RateLimiter()
        let limit = Hook.RateLimit(requests: 3, per: .seconds(30))
        #expect((0..<3).map { _ in limiter.admit("a", limit, now: .seconds(100)) } == [nil, nil, nil])
        #expect(limiter.admit("a", limit, now: .seconds(100)) == 10)
        #expect(limiter.admit("b", limit, now: .seconds(100)) == nil)
        #expect(limiter.admit("a", limit, now: .seconds(105)) == 5)
        #expect(limiter.admit("a", limit, now: .seconds(110)) == nil)
        #expect(limiter.admit("a", limit, now: .seconds(110)) == 10)
        #expect(limiter.admit("a", nil, now: .seconds(110)) == nil)
    }
}
