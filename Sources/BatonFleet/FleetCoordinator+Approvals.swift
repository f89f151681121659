import BatonCore
import FoundationEssentials

/// Approvals across a fleet (`FleetApprovals`): decided on any host, in one transaction that
/// holds the run's key row, by the engine's rule (`ApprovalRule.decide`) on the rows it reads;
/// the run then starts on its owner's host (the commit's NOTIFY wakes every host's feed, whose
/// look finds it startable), or ends `cancelled` at once (`FleetStop`, as a cancel of a queued run).
extension FleetCoordinator {
    public func decide(run id: Int64, by approver: Approver, approve: Bool, reason: String?,
                       answered: @escaping @Sendable (Result<RunSnapshot, BatonError>) -> Void) {
        pool.submit({ [self] db in
            try Self.retrying {
                try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ throws -> Result<RunSnapshot, BatonError> in
                    try decide(id, by: approver, approve: approve, reason: reason, on: db)
                }
            }
        }) { result in
            switch result {
            case let .success(outcome): answered(outcome)
            case let .failure(error): answered(.failure(Self.batonError(error)))
            }
        }
    }

    /// The decision's transaction, holding the run's key row: the run and its wait read, the
    /// engine decides, the first decision written (a second one, here or on another host, waited
    /// for the key row and reads the first: `notWaiting`, naming it).
    private func decide(_ id: Int64, by approver: Approver, approve: Bool, reason: String?,
                        on db: PGConnection) throws -> Result<RunSnapshot, BatonError> {
        guard let row = try db.query(FleetApprovals.runWithApproval(id)).first else { return .failure(.unknownRun(id)) }
        let (run, _, origin) = FleetApprovals.run(row)
        // A run out of flight is answered from the history, as on one host (`Service.decideEnded`:
        // `was decided already: ...`, or `ended cancelled before a decision`).
        if run.phase.isTerminal { return .failure(.unknownRun(id)) }
        let rule = conductor.action(named: run.action)?.approve
        let decided: ApprovalState
        switch ApprovalRule.decide(rule, run.approval, run: run, origin: origin, queued: run.phase == .queued, by: approver,
                                   approve: approve, reason: reason, at: .now) {
        case let .failure(error): return .failure(error)
        case let .success(state): decided = state
        }
        guard let written = try db.query(FleetApprovals.decide(id, decided.verdict ?? .approved, by: decided.decidedBy, reason: decided.reason))
            .first, let state = FleetApprovals.state(written, from: 0)?.state else {
            return .failure(.notWaiting(run: id, "run \(id) of \(run.action) was decided already"))
        }
        if let stop = state.stop(timeout: rule?.timeout, queuedAt: run.queuedAt) { try end(id, stop, on: db) }
        try db.execute("NOTIFY baton")
        guard let after = try db.query(FleetApprovals.runWithApproval(id)).first else { return .failure(.unknownRun(id)) }
        return .success(withHost(FleetApprovals.run(after).run))
    }

    /// Ends queued run `id` for `stop` (a deny, a timeout) in the caller's transaction, which
    /// holds its key row: as a cancel of a queued run (`FleetStop`), its key's slot written back.
    private func end(_ id: Int64, _ stop: RunMachine.Stop, on db: PGConnection) throws {
        guard let key = try FleetStop.slot(ofRun: id, on: db) else { return }
        var slot = key.slot
        _ = try FleetStop.perform([id], stop, slot: &slot, on: db, me: host.incarnation)
        if slot != key.slot { try FleetJournal.store(slot, key: key.key, on: db) }
    }

    /// The fleet's runs waiting for `approver`'s yes now, oldest first: the engine's rule
    /// (`ApprovalRule.refusal`) on each waiting row, with this host's config (every host's is one).
    public func awaitingApproval(by approver: Approver, answered: @escaping @Sendable ([RunSnapshot]) -> Void) {
        pool.submit({ [self] db in
            try db.query(FleetApprovals.allWaiting).rows.compactMap { row -> RunSnapshot? in
                let (run, _, origin) = FleetApprovals.run(row)
                guard let rule = conductor.action(named: run.action)?.approve, rule.refusal(approver, of: run, origin: origin) == nil else {
                    return nil
                }
                return withHost(run)
            }
        }) { result in answered((try? result.get()) ?? []) }
    }

    /// A feed tick's look for waits whose end has come by the database's clock: each decided
    /// `timed_out` once (the guarded UPDATE, under its key row: whichever host's tick comes
    /// first), its run ended `cancelled` in the same transaction. Returns how many it ended.
    @discardableResult
    func timeOutApprovals(on db: PGConnection) throws -> Int {
        let due = try db.query(FleetApprovals.due).rows.compactMap { $0[0].flatMap { Int64($0) } }
        var ended = 0
        for id in due {
            ended += try Self.retrying {
                try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ throws -> Int in
                    guard let row = try db.query(FleetApprovals.runWithApproval(id)).first else { return 0 }
                    let run = FleetApprovals.run(row).run
                    guard run.phase == .queued, let written = try db.query(FleetApprovals.decide(id, .timedOut, by: nil, reason: nil)).first,
                          let state = FleetApprovals.state(written, from: 0)?.state else { return 0 }
                    let timeout = conductor.action(named: run.action)?.approve?.timeout
                    if let stop = state.stop(timeout: timeout, queuedAt: run.queuedAt) { try end(id, stop, on: db) }
                    try db.execute("NOTIFY baton")
                    return 1
                }
            }
        }
        return ended
    }
}
