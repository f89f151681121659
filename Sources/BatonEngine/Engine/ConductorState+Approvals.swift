extension ConductorState {
    // MARK: Approvals

    /// A new run of an action with `approve` (a trigger's, a hook's or a needed run's): it waits,
    /// held in the table (`FlightTable.awaitApproval`) while holding its key, until an approver's
    /// yes; the wait is written in the item that makes the run, and its timeout armed from now.
    mutating func awaitApproval(_ id: Int64, _ action: Action, _ step: inout Step) {
        guard let rule = action.approve, let state = newApproval(action, at: step.now) else { return }
        approvals[id] = state
        // A new run's snapshot carries the wait already (its creation set it, at this step's time):
        // set only for a recovered run without one (a change is a new storage, issue 39).
        if flights[id]?.run.approval != state { flights[id]?.run.approval = state }
        step.entries.append(.approval(runID: id, state))
        // Waived at its creation (`newApproval`): no wait, no timer, nothing announced.
        guard state.isWaiting else { return }
        table.awaitApproval(id)
        if let timeout = rule.timeout { step.emit(.schedule(run: id, .approval, after: timeout)) }
        // `on: { awaiting }`: announced in the item that makes the run (a hook's own run only with `chain`).
        if let run = flights[id]?.run, let target = action.hooks.awaiting(run) {
            let cause = HookCause(run: id, action: action.name, event: .awaiting)
            triggerHook(target, HookContext(cause: cause, run: run, output: []), &step)
        }
    }

    /// What a new run of `action` made at `now` waits for: nil for an action without `approve`.
    public static func approvalWait(_ action: Action, at now: Timestamp) -> ApprovalState? {
        action.approve.map { ApprovalState(by: $0.by, until: $0.timeout.map { now + $0 }) }
    }

    /// The approval a new run of `action` made at `now` has: its wait (`approvalWait`), or, where
    /// the last reload gave up that wait (`reloadedActions`, `Action.waives`: a run made after it
    /// from a definition before it), already `waived`, as the reload waived the waiting ones.
    func newApproval(_ action: Action, at now: Timestamp) -> ApprovalState? {
        guard var state = Self.approvalWait(action, at: now) else { return nil }
        if reloadedActions?[action.name]?.waives(action) == true {
            state.verdict = .waived
            state.decidedAt = now
            state.reason = Self.approveRemoved
        }
        return state
    }

    /// Why a wait was waived: a reload or a restart found the action's `approve` removed.
    public static let approveRemoved = "the action's approve was removed from the config"

    /// A run recovery queued again that was waiting for its approval: it waits again, its timeout
    /// counted from its creation (at once, where that is past); one approved before goes on. The
    /// config may have changed across the restart: where `action` (as loaded now) has no `approve`
    /// any more, a waiting run waits no more and starts, its approval written `waived`; where it
    /// has one now, a run never started that did not wait arms a wait from now, written durably.
    mutating func awaitApprovalAgain(_ id: Int64, _ state: ApprovalState?, _ action: Action, _ step: inout Step) {
        guard let flight = flights[id] else { return }
        guard let state else {
            if action.approve != nil, flight.run.startedAt == nil { awaitApproval(id, action, &step) }
            return
        }
        if action.approve == nil, state.isWaiting {
            // Its needs waited for the approval (`triggerNeedsUnlessWaiting`): they run now.
            return waive(id, state, needs: action, &step)
        }
        approvals[id] = state
        flights[id]?.run.approval = state
        guard state.isWaiting else { return }
        table.awaitApproval(id)
        if let until = state.until { step.emit(.schedule(run: id, .approval, after: max(until - step.now, .zero))) }
    }

    /// A reload: each run waiting for its approval whose action as configured now (`configured`,
    /// by name) gives the wait up (`Action.waives`: its definition with `approve` removed, nothing
    /// else changed) waits no more, its approval written `waived`, its needs asked (its own),
    /// and may start, as after a restart (`awaitApprovalAgain`) and on a fleet's reload
    /// (`FleetCoordinator.waiveApprovals`, the same rule). A run whose action the reload removed,
    /// or whose command it changed, waits on: approved, it runs what it was triggered with.
    mutating func waiveApprovals(configured: [String: Action], _ step: inout Step) {
        reloadedActions = configured
        let waived = approvals.filter { id, state in
            guard state.isWaiting, let flight = flights[id], !flight.isOver else { return false }
            return configured[flight.action.name]?.waives(flight.action) == true
        }
        guard !waived.isEmpty else { return }
        for id in waived.keys.sorted() {
            guard let flight = flights[id], !flight.isOver, let state = approvals[id], state.isWaiting else { continue }
            waive(id, state, needs: flight.action, &step)
            table.approved(id)
        }
        admit(&step)
    }

    /// Writes a waiting run's approval `waived` and asks `action`'s needs, which waited for it.
    private mutating func waive(_ id: Int64, _ state: ApprovalState, needs action: Action, _ step: inout Step) {
        guard let flight = flights[id] else { return }
        var waived = state
        waived.verdict = .waived
        waived.decidedAt = step.now
        waived.reason = Self.approveRemoved
        record(waived, of: id, &step)
        triggerNeeds(id, action, params: flight.run.params, peer: flight.run.trigger, &step)
    }

    /// `baton approve RUN` / `baton deny RUN`: decided once, by one of the action's approvers who
    /// is not (unless `self: true`) the run's trigger. An approval lets the run start (its needs,
    /// pause and rate limit still apply); a deny ends it `cancelled`, never started. Answered
    /// with the decision once it is durable.
    mutating func decideApproval(_ token: Token, run id: Int64, _ approver: Approver, approve: Bool, reason: String?,
                                 _ step: inout Step) {
        guard let flight = flights[id] else { return step.answer(token, .failed(.unknownRun(id))) }
        // The rule is the engine's, for one machine and a fleet alike (`ApprovalRule.decide`).
        let decided: ApprovalState
        switch ApprovalRule.decide(flight.action.approve, approvals[id], run: flight.run, origin: flight.origin,
                                   queued: flight.machine.phase == .queued && !flight.isOver, by: approver, approve: approve,
                                   reason: reason, at: step.now) {
        case let .failure(error):
            // Asked at its wait's end, its timer not yet fired: refused as late, it times out now (as on the fleet).
            if let until = approvals[id]?.until, step.now >= until { approvalTimerFired(id, &step) }
            return step.answer(token, .failed(error))
        case let .success(state): decided = state
        }
        record(decided, of: id, &step)
        if approve {
            // Its needs run only once it is approved: a denied or timed-out run never ran them.
            triggerNeeds(id, flight.action, params: flight.run.params, peer: flight.run.trigger, &step)
            table.approved(id)
            admit(&step)
        } else {
            drive(id, .stop(.denied(by: approver.name, reason: reason)), &step)
        }
        step.answer(token, .approval(flights[id].map(live) ?? flight.run))
    }

    /// A run's `.approval` timer went off: still waiting at its end, it ends `cancelled`; fired
    /// early, it waits again for the rest.
    mutating func approvalTimerFired(_ id: Int64, _ step: inout Step) {
        guard let state = approvals[id], state.isWaiting, let until = state.until, let flight = flights[id], !flight.isOver else { return }
        guard step.now >= until else { return step.emit(.schedule(run: id, .approval, after: until - step.now)) }
        var decided = state
        decided.verdict = .timedOut
        decided.decidedAt = step.now
        record(decided, of: id, &step)
        drive(id, .stop(.approvalTimedOut(after: flight.action.approve?.timeout ?? (until - flight.run.queuedAt))), &step)
    }

    private mutating func record(_ state: ApprovalState, of id: Int64, _ step: inout Step) {
        approvals[id] = state
        flights[id]?.run.approval = state
        step.entries.append(.approval(runID: id, state))
    }

    /// The runs that wait for `approver`'s yes now: queued, undecided, of an action whose
    /// approvers include them and, unless the action allows it, not triggered by them. Oldest first.
    public func awaitingApproval(by approver: Approver) -> [RunSnapshot] {
        approvals.filter { $0.value.isWaiting }.keys.sorted().compactMap { id in
            guard let flight = flights[id], flight.machine.phase == .queued, let rule = flight.action.approve,
                  rule.refusal(approver, of: flight.run, origin: flight.origin) == nil else { return nil }
            return live(flight)
        }
    }

    /// The uid whose trigger made run `id`, followed back through the hooks and needs that made
    /// it: the firing or needing run's own origin. Nil for a run of a schedule's (or not in flight).
    func origin(of id: Int64) -> UInt32? {
        flights[id].flatMap { Self.origin(kept: $0.origin, trigger: $0.run.trigger?.uid) }
    }

    /// The origin a run passes on to the runs its hooks and needs make (who may not approve them):
    /// the origin `kept` with it at its creation, else its trigger's uid. Decided once, as a run is
    /// made, and kept with it: a host's `JournalEntry.origin`, a fleet's `runs.origin_uid` (whose
    /// `FleetJournal.Origin.parent` reads its parent's row by this rule).
    public static func origin(kept: UInt32?, trigger: UInt32?) -> UInt32? { kept ?? trigger }

    /// A new run's needs are triggered at its creation, unless it waits for an approval: then at
    /// its approval (`decideApproval`), so that a denied or timed-out run never ran them.
    mutating func triggerNeedsUnlessWaiting(_ id: Int64, _ action: Action, params: [String: String], peer: Peer?, _ step: inout Step) {
        guard !table.isApproving(id) else { return }
        triggerNeeds(id, action, params: params, peer: peer, &step)
    }
}
