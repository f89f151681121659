extension ApprovalRule {
    /// `baton approve RUN` / `baton deny RUN` by `approver` on run `run`, whose wait is `state`
    /// (nil: it has none), made by `origin`'s trigger: one machine's conductor and a fleet's
    /// transaction (on the rows it holds) decide with this alike. Refused, in this order: a run
    /// that does not wait for approval (`notWaiting`), an approver the rule does not admit or the
    /// run's own origin (`forbidden`: told no more of the run), a run decided already or no longer
    /// queued (`notWaiting`, naming the decision or its phase), a wait whose end has come at `now`
    /// though its timeout is not decided yet (`notWaiting`, `approval timed out`: the caller
    /// times it out at once). Else the decision to write: the run starts once it is written
    /// (approved) or ends `cancelled` (`RunMachine.Stop.denied`). `queued`: whether the run is
    /// still queued (not started, not ended). `now`: the deciding store's clock (a host's, or
    /// the fleet's database's, which its wait's `until` is on).
    public static func decide(_ rule: ApprovalRule?, _ state: ApprovalState?, run: RunSnapshot, origin: UInt32?, queued: Bool,
                              by approver: Approver, approve: Bool, reason: String?, at now: Timestamp) -> Result<ApprovalState, BatonError> {
        guard let state, let rule else {
            return .failure(.notWaiting(run: run.id, "run \(run.id) of \(run.action) does not wait for approval"))
        }
        if let refusal = rule.refusal(approver, of: run, origin: origin) { return .failure(.forbidden(refusal)) }
        if let decided = state.decisionText {
            return .failure(.notWaiting(run: run.id, "run \(run.id) of \(run.action) was decided already: \(decided)"))
        }
        guard queued else { return .failure(.notWaiting(run: run.id, "run \(run.id) of \(run.action) is \(run.phase.rawValue)")) }
        if let until = state.until, now >= until {
            return .failure(.notWaiting(run: run.id, "run \(run.id) of \(run.action) was decided already: approval timed out"))
        }
        var decided = state
        decided.verdict = approve ? .approved : .denied
        decided.decidedBy = approver.name
        decided.decidedAt = now
        decided.reason = approve ? nil : reason
        return .success(decided)
    }
}

extension ApprovalState {
    /// What a decided wait does to its run: nil for an approval (it starts when nothing else
    /// holds it back), else the stop that ends it `cancelled` (a deny, a timeout).
    public func stop(timeout: Duration?, queuedAt: Timestamp) -> RunMachine.Stop? {
        switch verdict {
        case .denied: .denied(by: decidedBy ?? "?", reason: reason)
        case .timedOut: .approvalTimedOut(after: timeout ?? ((decidedAt ?? queuedAt) - queuedAt))
        case .approved, .waived, nil: nil
        }
    }
}
