extension Conductor {
    /// Approves (`approve: true`) or denies run `run` as `approver` (`baton approve`, `baton
    /// deny`): answered with the run as the decision left it, once the decision is durable; or
    /// refused (`forbidden`: not an approver, or its own trigger; `notWaiting`; `unknownRun`).
    public func decide(run: Int64, by approver: Approver, approve: Bool, reason: String?,
                       answered: @escaping @Sendable (Result<RunSnapshot, BatonError>) -> Void) {
        ask({ .approval($0, run: run, approver, approve: approve, reason: reason) }, .approval(answered))
    }

    /// The runs waiting for `approver`'s yes now, oldest first (`ConductorState.awaitingApproval`).
    public func awaitingApproval(by approver: Approver) -> [RunSnapshot] {
        reading { $0.awaitingApproval(by: approver) }
    }
}
