import BatonCore
import FoundationEssentials

extension API {
    struct ApprovalBody: Decodable {
        var run: Int64
        /// True approves, false denies.
        var approve: Bool
        var reason: String?
    }

    /// The Approve/Deny pair of a run waiting for approval: batond decides whether the signed-in
    /// user may (one of the action's `approve.by`, not the run's trigger unless `self: true`).
    func approval(body: [UInt8], _ done: @escaping Answer) {
        guard let decision = try? JSONDecoder().decode(ApprovalBody.self, from: Data(body)) else {
            return done(answer(.failure(WireError(code: .badRequest, message: #"expected a JSON body like {"run": 42, "approve": true}"#))))
        }
        forward(Request(op: decision.approve ? .approve : .deny, run: decision.run, reason: decision.approve ? nil : decision.reason), done)
    }

    /// The runs waiting for the signed-in user's approval (the page offers the pair on those only).
    func approvals(_ done: @escaping Answer) { forward(Request(op: .approvals), done) }
}
