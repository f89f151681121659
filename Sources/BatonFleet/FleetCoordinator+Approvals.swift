import BatonCore
import FoundationEssentials

/// Approvals across a fleet (`FleetApprovals`): decided on any host, in one transaction that
/// holds the run's key row, by the engine's rule (`ApprovalRule.decide`) on the rows it reads;
/// the run then starts on its owner's host (the commit's NOTIFY wakes every host's feed, whose
/// look finds it startable), or ends `cancelled` at once (`FleetStop`, as a cancel of a queued run).
extension FleetCoordinator {
    public func decide(run id: Int64, by approver: Approver, approve: Bool, reason: String?, mayRead: @escaping @Sendable (String) -> Bool,
                       answered: @escaping @Sendable (Result<RunSnapshot, BatonError>) -> Void) {
        pool.submit({ [self] db in
            try Self.retrying {
                try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ throws -> Result<RunSnapshot, BatonError> in
                    try decide(id, by: approver, approve: approve, reason: reason, mayRead: mayRead, on: db)
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
    /// for the key row and reads the first: `notWaiting`, naming it). A caller who may not read
    /// the run's action is told nothing of it (`unknownRun`, as one machine answers). A wait whose
    /// end came by the database's clock takes no decision (the engine's rule, on that clock):
    /// it is timed out here, at once; the write's guard (`inTime`) holds a later clock to it too.
    private func decide(_ id: Int64, by approver: Approver, approve: Bool, reason: String?, mayRead: (String) -> Bool,
                        on db: PGConnection) throws -> Result<RunSnapshot, BatonError> {
        guard let row = try db.query(FleetApprovals.runWithApproval(id)).first else { return .failure(.unknownRun(id)) }
        let (run, _, origin) = FleetApprovals.run(row)
        guard mayRead(run.action) else { return .failure(.unknownRun(id)) }
        // A run out of flight is answered from the history, as on one host (`Service.decideEnded`:
        // `was decided already: ...`, or `ended cancelled before a decision`).
        if run.phase.isTerminal { return .failure(.unknownRun(id)) }
        // The run's own definition's rule (`definition`), not this host's config's of the moment.
        let rule = try definition(of: run.action, FleetApprovals.definition(row), on: db)?.approve
        // The engine's rule on the database's clock, which the wait's `until` is on (a late decision is refused there).
        let now = try db.query("SELECT \(FleetCooldown.databaseNow)").first?[0].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)) ?? .now
        let decided: ApprovalState
        switch ApprovalRule.decide(rule, run.approval, run: run, origin: origin, queued: run.phase == .queued, by: approver,
                                   approve: approve, reason: reason, at: now) {
        case let .failure(error):
            // Asked at its wait's end: refused as late, it times out in this transaction (as a host's at once).
            if let until = run.approval?.until, now >= until { _ = try timeOut(id, on: db) }
            return .failure(error)
        case let .success(state): decided = state
        }
        // What a deny's stop needs, read before the decision is written (`Ending`); an approval stops nothing.
        let ending = decided.stop(timeout: rule?.timeout, queuedAt: run.queuedAt) == nil ? nil : try Ending.read(id, on: db)
        guard let written = try db.query(FleetApprovals.decide(id, decided.verdict ?? .approved, by: decided.decidedBy, reason: decided.reason,
                                                               inTime: true)).first,
              let state = FleetApprovals.state(written, from: 0)?.state else {
            let late = try timeOut(id, on: db) ? "approval timed out" : "decided already"
            return .failure(.notWaiting(run: id, "run \(id) of \(run.action) was decided already: \(late)"))
        }
        try end(state, of: id, ending, timeout: rule?.timeout, queuedAt: run.queuedAt, on: db)
        try db.execute("NOTIFY baton")
        guard let after = try db.query(FleetApprovals.runWithApproval(id)).first else { return .failure(.unknownRun(id)) }
        return .success(withHost(FleetApprovals.run(after).run))
    }

    /// What a decided wait's end needs of its run, read while its key row is held, before the
    /// decision is written: the run's facts (`FleetStop.facts`) and its key's slot.
    struct Ending {
        var facts: KeyFacts.Run?
        var key: String
        var slot: KeySlot

        static func read(_ id: Int64, on db: PGConnection) throws -> Ending? {
            guard let key = try FleetStop.slot(ofRun: id, on: db) else { return nil }
            return Ending(facts: try FleetStop.facts(of: [id], on: db)[id], key: key.key, slot: key.slot)
        }
    }

    /// Ends run `id` as its decided wait `state` says (a deny, a timeout), in one engine step
    /// (`ApprovalState.end`) on what was read of it (`ending`), in the caller's transaction,
    /// which holds its key row: as a cancel of a queued run (`FleetStop`), its key's slot
    /// written back. An approval writes nothing.
    private func end(_ state: ApprovalState, of id: Int64, _ ending: Ending?, timeout: Duration?, queuedAt: Timestamp,
                     on db: PGConnection) throws {
        guard let ending else { return }
        var slot = ending.slot
        guard let stop = state.end(of: id, ending.facts, slot: &slot, timeout: timeout, queuedAt: queuedAt, me: host.incarnation, at: .now)
        else { return }
        try FleetStop.write([stop], on: db)
        if slot != ending.slot { try FleetJournal.store(slot, key: ending.key, on: db) }
    }

    /// The fleet's runs waiting for `approver`'s yes now, oldest first: the engine's rule
    /// (`ApprovalRule.refusal`) on each waiting row, with the `approve` of the definition its run
    /// was triggered with (`definition`).
    /// None past its end. A database not read is `storeUnavailable`, not "nothing waits".
    public func awaitingApproval(by approver: Approver, answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void) {
        pool.submit({ [self] db in
            try db.query(FleetApprovals.allWaiting).rows.compactMap { row -> RunSnapshot? in
                let (run, _, origin) = FleetApprovals.run(row)
                guard let rule = try definition(of: run.action, FleetApprovals.definition(row), on: db)?.approve,
                      rule.refusal(approver, of: run, origin: origin) == nil else {
                    return nil
                }
                return withHost(run)
            }
        }) { result in
            answered(result.mapError { .storeUnavailable("the fleet's approvals could not be read: \($0)") })
        }
    }

    /// A feed tick's look for waits whose end has come by the database's clock (at most 100 a
    /// tick): each decided `timed_out` once (the guarded UPDATE, under its key row: whichever
    /// host's tick comes first), its run ended `cancelled` in the same transaction. A key row
    /// held longer than a moment is left for the next tick (`lock_timeout`): the feed never
    /// stalls on it. Returns how many it ended.
    @discardableResult
    func timeOutApprovals(on db: PGConnection) throws -> Int {
        try each(FleetApprovals.due, on: db) { id in try timeOut(id, on: db) }
    }

    /// A feed tick's look for waits of actions that no longer ask for approval on this host (a
    /// reload removed `approve`): each decided `waived` once, as on one machine, its run then
    /// startable. Every tick's once a second, whether or not an action has `approve`. Only a
    /// wait this host's config now gives up (`Action.waives`): the action configured here without
    /// `approve`, and the run's definition (`lookUp`, whose `approve` it waits by: never nil) one
    /// whose process is that config's; a host whose config lacks the action, or runs it otherwise,
    /// waives no other definition's wait, and a refused or unknown one is not waived.
    @discardableResult
    func waiveApprovals(on db: PGConnection) throws -> Int {
        let asking = conductor.configuredActions().filter { $0.approve != nil }.map(\.name)
        return try each(FleetApprovals.unasked(asking), on: db) { id in
            guard let row = try db.query(FleetApprovals.runWithApproval(id)).first, case let run = FleetApprovals.run(row).run, run.phase == .queued,
                  let configured = conductor.action(named: run.action),
                  case let .action(definition) = try lookUp(run.action, FleetApprovals.definition(row), on: db),
                  configured.waives(definition),
                  try db.query(FleetApprovals.decide(id, .waived, by: nil, reason: ConductorState.approveRemoved)).first != nil
            else { return false }
            try db.execute("NOTIFY baton")
            return true
        }
    }

    /// Runs `body` for each run `look` finds, each in its own transaction holding its key row,
    /// waiting for that row a moment at most; returns how many `body` changed.
    private func each(_ look: FleetApprovals.Statement, on db: PGConnection, _ body: (Int64) throws -> Bool) throws -> Int {
        var changed = 0
        for id in try db.query(look).rows.compactMap({ $0[0].flatMap { Int64($0) } }) {
            do {
                changed += try Self.retrying {
                    try db.transaction(opening: [("SET LOCAL lock_timeout = '200ms'", []), FleetJournal.lockKeys(runs: [id])]) { _ in
                        try body(id) ? 1 : 0
                    }
                }
            } catch let error as PGError where error.sqlState == "55P03" {
                continue  // its key row is held (a decision, a start): the next tick looks again
            }
        }
        return changed
    }

    /// Times out run `id`'s wait, in the caller's transaction holding its key row, where it is
    /// undecided, its run queued and its end come by the database's clock: the run ends
    /// `cancelled` (approval timed out). Whether it did.
    private func timeOut(_ id: Int64, on db: PGConnection) throws -> Bool {
        guard let row = try db.query(FleetApprovals.runWithApproval(id)).first else { return false }
        let run = FleetApprovals.run(row).run
        guard run.phase == .queued else { return false }
        let ending = try Ending.read(id, on: db)
        guard let written = try db.query(FleetApprovals.timeOut(id)).first, let state = FleetApprovals.state(written, from: 0)?.state else {
            return false
        }
        let timeout = try definition(of: run.action, FleetApprovals.definition(row), on: db)?.approve?.timeout
        try end(state, of: id, ending, timeout: timeout, queuedAt: run.queuedAt, on: db)
        try db.execute("NOTIFY baton")
        return true
    }
}
