import BatonCore
@testable import BatonDashboard
import Testing

/// The dashboard refuses a bad param before sending it, in batond's own words (the same check).
@Suite("Dashboard param check")
struct ParamCheckTests {
    static let info = ActionInfo(name: "deploy", description: nil, exec: ["true"], policy: .reject, policies: [], timeout: nil,
                                 params: ["env": ParamInfo(pattern: "^(staging|prod)$", default: nil),
                                          "note": ParamInfo(pattern: nil, default: "none")],
                                 keyParams: ["env"])

    @Test("each wrong trigger gets the message batond would give; a right one gets none", arguments: [
        (["env": "prod"], nil),
        (["env": "staging", "note": "hi"], nil),
        (["env": "nope"], "param env: \"nope\" does not match ^(staging|prod)$"),
        ([:], "param env is required by action deploy"),
        (["env": "prod", "color": "red"], "action deploy has no param color (it takes: env, note)"),
        (["env": "pr\nod"], "param env: a value may not contain a newline or NUL"),
    ] as [([String: String], String?)])
    func check(params: [String: String], message: String?) {
        let refusal = API.check(params, against: Self.info)
        #expect(refusal?.message == message)
        #expect(refusal.map { $0.code == .badRequest } ?? true)
    }
}
