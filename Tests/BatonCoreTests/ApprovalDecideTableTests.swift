@testable import BatonEngine
import Testing

/// `ApprovalRule.decide`: the one rule for a decision on a run waiting for approval, that one
/// host's conductor (`decideApproval`) and a fleet's transaction (`FleetCoordinator+Approvals`,
/// on the rows it reads) both call. Each row is a run's facts and a decision asked; the answer is
/// the refusal's code and text, or the decision written and the stop it makes.
@Suite("ApprovalRule.decide: one decision for a host and the fleet")
struct ApprovalDecideTableTests {
    static let rule = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]), timeout: .seconds(3_600))
    static let waiting = ApprovalState(by: ["group:ops"], until: Timestamp(rawValue: 9_000))
    static let alice = Approver(uid: 1001, name: "alice", groups: [50])
    static let bob = Approver(uid: 1002, name: "bob", groups: [50])
    static let eve = Approver(uid: 1003, name: "eve", groups: [60])

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var rule: ApprovalRule? = ApprovalDecideTableTests.rule
        var state: ApprovalState? = ApprovalDecideTableTests.waiting
        var origin: UInt32? = nil
        var queued = true
        var approver = ApprovalDecideTableTests.bob
        var approve = true
        /// The refusal's code and the start of its text, or nil where it is decided.
        var refused: (ErrorCode, String)? = nil
        var verdict: ApprovalState.Verdict? = nil
        var testDescription: String { name }
    }

    static var denied: ApprovalState {
        var state = waiting
        state.verdict = .denied
        state.decidedBy = "carol"
        state.reason = "not today"
        return state
    }

    static let rows: [Row] = [
        Row(name: "an approver of by approves", verdict: .approved),
        Row(name: "an approver of by denies", approve: false, verdict: .denied),
        Row(name: "a run that has no wait", state: nil, refused: (.notWaiting, "run 7 of deploy does not wait for approval")),
        Row(name: "an action without approve (a host's config lost it)", rule: nil, refused: (.notWaiting, "run 7 of deploy does not wait")),
        Row(name: "not one of by", approver: eve, refused: (.forbidden, "eve may not approve run 7 of deploy: approvals are by group:ops")),
        Row(name: "the run's trigger", approver: alice, refused: (.forbidden, "alice triggered run 7 of deploy and may not approve it")),
        Row(name: "the origin of the run that made it", origin: 1002, refused: (.forbidden, "bob triggered the run that made run 7")),
        Row(name: "the trigger with self: true", rule: ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]), allowsSelf: true),
            approver: alice, verdict: .approved),
        Row(name: "decided already: names the decision", state: denied,
            refused: (.notWaiting, "run 7 of deploy was decided already: denied by carol: not today")),
        Row(name: "no longer queued", queued: false, refused: (.notWaiting, "run 7 of deploy is loading")),
        Row(name: "who may not decide is told no more, decided or not", state: denied, approver: eve, refused: (.forbidden, "eve may not")),
        // Audit D8: at its end (before the timer's event), a decision is late on a host as on the fleet.
        Row(name: "at its end, its timer not yet fired: timed out", state: ApprovalState(by: ["group:ops"], until: Timestamp(rawValue: 5_000)),
            refused: (.notWaiting, "run 7 of deploy was decided already: approval timed out")),
        Row(name: "a moment before its end", state: ApprovalState(by: ["group:ops"], until: Timestamp(rawValue: 5_001)), verdict: .approved),
        Row(name: "at its end, who may not decide is told no more", state: ApprovalState(by: ["group:ops"], until: Timestamp(rawValue: 5_000)),
            approver: eve, refused: (.forbidden, "eve may not")),
    ]

    @Test("a decision on a waiting run", arguments: rows)
    func decide(_ row: Row) {
        var run = RunSnapshot(id: 7, action: "deploy", key: "deploy", phase: row.queued ? .queued : .loading, policy: .reject,
                              params: ["ref": "v2"], trigger: Peer(uid: 1001, gid: 1001, pid: 1), queuedAt: Timestamp(rawValue: 1_000))
        run.approval = row.state
        let now = Timestamp(rawValue: 5_000)
        let result = ApprovalRule.decide(row.rule, row.state, run: run, origin: row.origin, queued: row.queued, by: row.approver,
                                         approve: row.approve, reason: "why", at: now)
        switch result {
        case let .failure(error):
            #expect(row.refused?.0 == error.code, "\(error)")
            #expect(row.refused.map { error.message(at: now).hasPrefix($0.1) } == true, "\(error.message(at: now))")
        case let .success(state):
            #expect(row.refused == nil && state.verdict == row.verdict && state.decidedBy == row.approver.name && state.decidedAt == now)
            #expect(state.reason == (row.approve ? nil : "why"), "an approval keeps no reason")
            let stop = state.stop(timeout: row.rule?.timeout, queuedAt: run.queuedAt)
            #expect(stop == (row.approve ? nil : .denied(by: row.approver.name, reason: "why")), "a deny ends the run; an approval lets it start")
        }
    }
}
