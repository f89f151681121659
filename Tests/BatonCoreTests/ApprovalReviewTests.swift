@testable import BatonEngine
import Testing

/// `ApprovalState.review`: what recovery (a host's restart, a fleet's takeover) does with a run's
/// approval against the action's `approve` as loaded now; the one rule for both (audit D5).
@Suite("Approval review at recovery")
struct ApprovalReviewTests {
    static let rule = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]), timeout: .seconds(60), allowsSelf: false)
    static let waiting = ApprovalState(by: ["group:ops"], until: Timestamp(rawValue: 5_000_000))
    static let approved = ApprovalState(by: ["group:ops"], until: nil, verdict: .approved, decidedBy: "bob")
    static let now = Timestamp(rawValue: 9_000_000)

    static var waived: ApprovalState {
        var waived = waiting
        waived.verdict = .waived
        waived.decidedAt = now
        waived.reason = "the action's approve was removed from the config"
        return waived
    }

    @Test("the review's table: waived where approve is gone and it waits; armed where approve is new and it never waited nor started; else kept",
          arguments: [
              (waiting, nil, false, ApprovalState.Review.waive(waived)),
              (waiting, rule, false, .keep),
              (approved, nil, false, .keep),
              (approved, rule, true, .keep),
              (nil, rule, false, .arm),
              (nil, rule, true, .keep),
              (nil, nil, false, .keep),
          ] as [(ApprovalState?, ApprovalRule?, Bool, ApprovalState.Review)])
    func table(state: ApprovalState?, approve: ApprovalRule?, started: Bool, expected: ApprovalState.Review) {
        #expect(ApprovalState.review(state, approve: approve, started: started, at: Self.now) == expected)
    }
}
