import BatonCore

extension History {
    /// Run `id`'s approval (`approvals`, migration 14): what it waits for, or how it was decided;
    /// nil for a run of an action without `approve`.
    public func approval(of id: Int64) throws -> ApprovalState? {
        try connection.withStatement("SELECT approvers, until, verdict, decided_by, decided_at, reason FROM approvals WHERE run_id = ?") { statement in
            try statement.bind([.integer(id)])
            guard try statement.step() else { return nil }
            let by = (statement.string(0) ?? "").split(separator: "\n").map(String.init)
            return ApprovalState(by: by, until: statement.int64(1).map(Timestamp.init(rawValue:)),
                                 verdict: statement.string(2).flatMap(ApprovalState.Verdict.init(rawValue:)), decidedBy: statement.string(3),
                                 decidedAt: statement.int64(4).map(Timestamp.init(rawValue:)), reason: statement.string(5))
        }
    }

    /// A run with its approval, where it has one (`show`, and the runs recovery takes back).
    func withApproval(_ run: RunSnapshot) throws -> RunSnapshot {
        var run = run
        run.approval = try approval(of: run.id)
        return run
    }

    func withApproval(_ unfinished: UnfinishedRun) throws -> UnfinishedRun {
        var unfinished = unfinished
        unfinished.run = try withApproval(unfinished.run)
        return unfinished
    }
}
