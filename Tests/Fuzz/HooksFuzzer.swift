// libFuzzer target: what the webhook listener makes of a request (head, then body): the head
// parser, then HookGate's route and decision. Any bytes must end in an answer or a trigger, never
// a crash; a trigger, a pong or an ignored delivery only with the hook's signature over the very
// body (checked here apart from the gate: an unsigned sender learns nothing of the rules), every
// 401 the same answer, and a status read only with its run's token or a signature.
import BatonCore
import BatonHooks
import BatonIPC

let fuzzSecret = Secret(Array("fuzz-secret-0123456789".utf8))
let fuzzNow: Int64 = 1_764_600_000
let fuzzHooks = HookGate(hooks: [
    "gh": Hook(name: "gh", action: "deploy", secret: fuzzSecret, signature: .github, params: ["env": try! JSONPointer("/ref")],
               rules: HookRules(events: ["push", "tag_push"], when: [.init(try! JSONPointer("/repository/full_name"), ["a/b", "a/c"])],
                                patterns: ["env": try! ParamPattern("refs/heads/(main|release)")])),
    "gl": Hook(name: "gl", action: "deploy", secret: fuzzSecret, signature: .gitlab, params: ["env": try! JSONPointer("/ref")]),
    "ci": Hook(name: "ci", action: "ci", secret: fuzzSecret, signature: .hmacSHA256, params: ["n": try! JSONPointer("/a~1b/0")]),
], bodyLimit: 1_024)

/// Whether the head carries the hook's signature over `body`, computed apart from the gate.
func fuzzSigned(_ hook: Hook, _ head: HTTPRequestHead, _ body: [UInt8]) -> Bool {
    let values = { (name: String) in head.fields.filter { $0.name == name }.map(\.value) }
    switch hook.signature {
    case .github:
        return values("x-hub-signature-256").map { $0.lowercased() } == ["sha256=" + HMAC.hex(HMAC.sha256(key: fuzzSecret.bytes, message: body))]
    case .gitlab:
        return values("x-gitlab-token") == ["fuzz-secret-0123456789"]
    case .hmacSHA256:
        guard let value = values("x-baton-signature").first, values("x-baton-signature").count == 1 else { return false }
        let parts = value.split(separator: ",").map { $0.drop { $0 == " " } }
        guard let time = parts.first(where: { $0.hasPrefix("t=") }).flatMap({ Int64($0.dropFirst(2)) }), abs(time - fuzzNow) <= 300 else { return false }
        let expected = "v1=" + HMAC.hex(HMAC.sha256(key: fuzzSecret.bytes, message: Array("\(time).".utf8) + body))
        return parts.contains { $0.lowercased() == expected }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHooks(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard case let .head(head, length) = HTTPRequestHead.parse(bytes, limit: 2_048, maxFields: 16) else { return 0 }
    switch fuzzHooks.route(head) {
    case let .answer(answer):
        precondition([404, 405, 411, 413].contains(answer.status), "a refusal from the head is 404, 405, 411 or 413")
        precondition(answer.response.body.count < 64, "and says no more than its status")
    case let .read(route, bodyLength):
        precondition(bodyLength <= 1_024, "no body past the limit is read")
        let body = Array(bytes[length...].prefix(bodyLength))
        switch fuzzHooks.decide(route, head, body: body, now: fuzzNow) {
        case let .answer(answer):
            precondition(answer.status == 400 || answer == .unauthorized, "an answer after the body is 400, or the one 401")
            if answer.status == 400, case let .trigger(hook) = route { precondition(fuzzSigned(hook, head, body), "a 400 only once signed") }
        case let .trigger(trigger):
            guard case let .trigger(hook) = route else { preconditionFailure("a trigger from a status URL") }
            precondition(fuzzSigned(hook, head, body), "a trigger only with the hook's signature over the body")
            precondition(trigger.action == hook.action && Set(trigger.params.keys).isSubset(of: Set(hook.params.keys)))
        case let .pong(name), let .ignored(name, _):
            guard case let .trigger(hook) = route else { preconditionFailure("a pong or an ignored delivery from a status URL") }
            precondition(name == hook.name && fuzzSigned(hook, head, body), "a pong or an ignored delivery only once signed")
        case let .status(name, action, run):
            guard case let .status(hook, id) = route else { preconditionFailure("a status read from a trigger URL") }
            precondition(name == hook.name && action == hook.action && run == id)
            let token = head.fields.filter { $0.name == "authorization" }.map(\.value) == ["Bearer " + hook.statusToken(run: run)]
                || head.fields.filter { $0.name == "authorization" }.map { $0.value.lowercased() } == ["bearer " + hook.statusToken(run: run)]
            precondition(token || fuzzSigned(hook, head, body), "a status read only with its token or a signature")
        }
    }
    return 0
}
