extension ConductorState {
    // MARK: Needs

    /// What a trigger of one needed action came to: the run the needing run waits for, or why it cannot start.
    enum NeedTriggered: Equatable {
        case run(NeededRun)
        case failed(String)
    }

    /// A new run of an action with `needs` (a trigger's, a hook's or a needed run's): each needed
    /// action is triggered under `join` with the params the need names (`KeyDecision`, as any
    /// trigger: it joins the key's run in flight or pending, or makes one), in order, and the run
    /// waits, held in the table (`FlightTable.await`), until every needed run succeeded. The
    /// relation is written in the item that makes the run. A need that cannot be triggered (its
    /// action paused, over its rate, a param refused) refuses the trigger before the run is made
    /// (`needRefusal`); one refused here all the same (two needs over one rate limit, recovery's
    /// trigger again) ends the run `failure` at once, never started.
    /// The runs it needs hold their own keys: cancelling the waiting run leaves them running (they may serve others).
    mutating func triggerNeeds(_ id: Int64, _ action: Action, params: [String: String], peer: Peer?, _ step: inout Step) {
        guard !action.needs.isEmpty else { return }
        var needed: [NeededRun] = []
        var failure: String?
        for need in action.needs {
            switch triggerNeed(need, of: id, action.name, params: params, peer: peer, &step) {
            case let .run(run): needed.append(run)
            case let .failed(message): failure = message
            }
            if failure != nil { break }
        }
        if !needed.isEmpty { step.entries.append(.needs(runID: id, needed: needed)) }
        if let failure { return drive(id, .stop(.needs(failure)), &step) }
        wait(id, on: needed, &step)
    }

    /// Run `id` waits for `needed` as known now: held until they succeed, ended when one did not,
    /// free at once when all did.
    /// A need stopped by a shutdown that was just asked again and still is (its action's needs
    /// changed) fails the wait, naming it.
    mutating func wait(_ id: Int64, on needed: [NeededRun], _ step: inout Step) {
        switch needBook.wait(id, on: needed) {
        case .met?: table.needsMet(id)
        case let .failed(message)?: drive(id, .stop(.needs(message)), &step)
        case let .askAgain(indices)?: drive(id, .stop(.needs(needed[indices[0]].failure ?? "needs stopped")), &step)
        case nil: table.await(id)
        }
    }

    /// Run `id`'s needs at `indices` were stopped by a shutdown (`NeedBook.Outcome.askAgain`):
    /// each is triggered again, as the run's action says now (one whose action changed is not),
    /// the relation rewritten, and the run waits for them again; a need refused now ends it
    /// `failure` at once, never started, as when it was made (`triggerNeeds`).
    mutating func askAgain(_ id: Int64, _ needs: [NeededRun], _ indices: [Int], _ step: inout Step) {
        guard let flight = flights[id], flight.machine.phase == .queued else { return }
        var now = needs
        var failure: String?
        for index in indices {
            guard flight.action.needs.indices.contains(index), flight.action.needs[index].action.name == now[index].action else { continue }
            switch triggerNeed(flight.action.needs[index], of: id, flight.action.name, params: flight.run.params, peer: flight.run.trigger, &step) {
            case let .run(run): now[index] = run
            case let .failed(message): failure = message
            }
            if failure != nil { break }
        }
        step.entries.append(.needs(runID: id, needed: now))
        if let failure { return drive(id, .stop(.needs(failure)), &step) }
        wait(id, on: now, &step)
    }

    mutating func triggerNeed(_ need: NeedTarget, of id: Int64, _ needing: String, params given: [String: String], peer: Peer?,
                                      _ step: inout Step) -> NeedTriggered {
        let target = need.action
        let params: [String: String]
        do { params = try need.params(for: given) } catch { return .failed("needs \(target.name): \(error.message(at: step.now))") }
        let key = target.key(for: params)
        let via = "needed by \(needing) run \(id)"
        var slot = table.slot(of: key)
        let decided = KeyDecision.decide(KeyDecision.Asked(action: target, policy: .join, params: params),
                                         keyView(key, target, slot: nil, at: step.now, uptime: step.uptime), slot: &slot, candidate: { nextRunID })
        let now = step.now
        let record = { (run: Int64?, decision: TriggerRecord.Decision) -> JournalEntry in
            .trigger(TriggerRecord(runID: run, action: target.name, key: key, decision: decision, policy: .join, peer: peer, at: now,
                                   params: params, via: via))
        }
        switch decided {
        case let .refused(error):
            return .failed("needs \(target.name): \(error.message(at: now))")
        case let .paused(pause, _):
            step.entries.append(record(nil, .paused))
            return .failed("needs \(target.name): \(pause.message(at: now))")
        case let .rateLimited(limit, next):
            step.entries.append(record(nil, .rateLimited))
            return .failed("needs \(target.name): \(BatonError.rateLimited(action: target.name, limit: limit, next: next).message(at: now))")
        case let .debounced(run, window):
            push(run, to: window, &step)
            step.entries.append(record(run, .debounced))
            return .run(NeededRun(action: target.name, run: run, phase: .queued))
        case let .shared(decision):
            if let kind = decided.record { step.entries.append(record(decision.run, kind)) }
            // Inside its cooldown the key's last success serves: nothing runs, the need is met.
            if case .cooled = decision { return .run(NeededRun(action: target.name, run: decision.run, phase: .success)) }
            let known = flights[decision.run]?.run
            return .run(NeededRun(action: target.name, run: decision.run, phase: known?.phase ?? .queued, reason: known?.reason))
        case let .created(decision, window):
            nextRunID += 1
            releaseIfOver(target.name, at: now)
            table.apply(decision, key: key, slot: slot, action: target.name, locks: target.locks, gated: target.debounce != nil,
                        rate: target.rateClaim(key: key))
            createNeededRun(decision.run, window, target, key: key, params: params, peer: peer, via: via, origin: origin(of: id), &step)
            return .run(NeededRun(action: target.name, run: decision.run, phase: flights[decision.run]?.run.phase ?? .queued))
        }
    }

    /// A needed action's new run: queued in this item, started once durable (and once its own needs succeeded).
    private mutating func createNeededRun(_ id: Int64, _ window: DebounceWindow?, _ action: Action, key: String, params: [String: String],
                                          peer: Peer?, via: String, origin: UInt32?, _ step: inout Step) {
        var run = RunSnapshot(id: id, action: action.name, key: key, phase: .queued, policy: .join, params: params, trigger: peer,
                              queuedAt: step.now)
        let (estimate, approval) = (estimates.median(action.name), newApproval(action, at: step.now))
        run.update { run in (run.via, run.estimate, run.approval) = (via, estimate, approval) }
        let transition = Transition(runID: id, seq: 1, from: nil, to: .queued, at: step.now,
                                    detail: KeyDecision.queuedDetail(.created(id), via: via, window: window))
        flights[id] = Flight(run: run, machine: RunMachine(retries: action.retry.attempts), action: action, runner: nil, seq: 1, debounce: window)
        flights[id]?.origin = origin
        if let window { hold(id, window, &step) }
        timePause(id, action.name, &step)
        step.entries.append(.created(run, transition))
        if let origin, origin != peer?.uid { step.entries.append(.origin(runID: id, uid: origin)) }
        awaitApproval(id, action, &step)
        step.after += [.publish(RunUpdate(run: run, transition: transition)), .durable(id)]
        triggerNeedsUnlessWaiting(id, action, params: params, peer: peer, &step)
    }

    /// A run's phase is recorded: the runs waiting on it learn it; its end decides their waits
    /// (met: they may start once this end's `finish` admits; failed: they end `failure`, never
    /// started, in this end's item). A waiting run that ends itself waits no more.
    mutating func needPhaseRecorded(_ run: RunSnapshot, _ step: inout Step) {
        let waiting = needBook.waiting(on: run.id)
        defer { tellWaiting(waiting, &step) }
        guard run.phase.isTerminal else { return needBook.moved(run.id, to: run.phase) }
        needBook.forget(run.id)
        decideWaits(on: run.id, phase: run.phase, reason: run.reason, &step)
    }

    /// The runs that waited on a needed run that moved, still queued: each told as it is now (an
    /// update without a transition, after the needed run's own), so that `run` and `wait`
    /// clients see what it waits for change. One this move ended told its end already.
    private func tellWaiting(_ runs: [Int64], _ step: inout Step) {
        for id in runs {
            guard let flight = flights[id], flight.run.phase == .queued else { continue }
            step.after.append(.publish(RunUpdate(run: live(flight), transition: nil)))
        }
    }

    /// The runs waiting on `needed`, which ended so: started once all theirs succeeded, ended when
    /// it did not; one whose need a shutdown stopped stays queued (held in the table), and the next
    /// batond asks that need again (`recoverNeeds`): only a shutdown stops a run so, and this
    /// batond takes no trigger after it.
    mutating func decideWaits(on needed: Int64, phase: Phase, reason: String?, _ step: inout Step) {
        for (waiting, outcome) in needBook.ended(needed, phase: phase, reason: reason) {
            switch outcome {
            case .met: table.needsMet(waiting)
            case let .failed(message): drive(waiting, .stop(.needs(message)), &step)
            case .askAgain: break
            }
        }
    }

    /// What a queued run waits for, as told while it waits (`waiting for build-a run 41`).
    func addNeeds(to run: inout RunSnapshot) {
        guard run.phase == .queued, let needs = needBook.needs(of: run.id) else { return }
        run.needs = needs
    }

    /// After recovery took the runs back: each queued run that needs others waits for them again,
    /// as they are now (in flight again, ended by this recovery, or as the history has them). A
    /// needed run the previous batond's shutdown stopped is asked again (`askAgain`).
    mutating func recoverNeeds(_ runs: [RecoveredRun], ended: [Int64: RunSnapshot], _ step: inout Step) {
        for recovered in runs {
            let id = recovered.unfinished.run.id
            guard let needs = recovered.unfinished.needs, flights[id]?.machine.phase == .queued else { continue }
            let now = needs.map { need -> NeededRun in
                var need = need
                if let live = flights[need.run] {
                    (need.phase, need.reason) = (live.run.phase, live.run.reason)
                } else if let over = ended[need.run] {
                    (need.phase, need.reason) = (over.phase, over.reason)
                } else if !need.phase.isTerminal {
                    // Not taken back and not ended here: nothing will end it, so it counts as interrupted.
                    (need.phase, need.reason) = (.failure, "interrupted")
                }
                return need
            }
            if case let .askAgain(indices)? = NeedBook.outcome(of: now) { askAgain(id, now, indices, &step) } else { wait(id, on: now, &step) }
        }
    }
}
