extension ConductorState {
    // MARK: Triggers

    /// Decides a trigger against its key's runs in flight (`KeyDecision`). A new run is answered
    /// once its creation is durable; a join or rejection once its trigger record is.
    mutating func decide(_ token: Token, _ trigger: Trigger, _ step: inout Step) {
        guard mode == .accepting else { return step.answer(token, .failed(.shuttingDown)) }
        var slot = table.slot(of: trigger.key)
        let decided = KeyDecision.decide(KeyDecision.Asked(trigger), keyView(trigger.key, trigger.action, slot: trigger.slot, at: step.now, uptime: step.uptime),
                                         slot: &slot, candidate: { nextRunID })
        switch decided {
        case let .refused(error):
            step.answer(token, .failed(error))
        case let .paused(pause, _):
            refusePaused(pause, decided.record ?? .paused, token, trigger, &step)
        case let .rateLimited(limit, next):
            refuseRateLimited(limit, next, token, trigger, &step)
        case let .debounced(run, window):
            joinPending(run, window, token, trigger, &step)
        case let .created(decision, window):
            // A need that would be refused refuses the trigger before anything is stopped or made.
            if let refusal = needRefusal(trigger.action, params: trigger.params, at: step.now, uptime: step.uptime) {
                return refuseForNeed(refusal, token, trigger, &step)
            }
            nextRunID += 1
            releaseIfOver(trigger.action.name, at: step.now)
            table.apply(decision, key: trigger.key, slot: slot, action: trigger.action.name, locks: trigger.action.locks,
                        gated: trigger.action.debounce != nil, rate: trigger.action.rateClaim(key: trigger.key))
            create(decision, window, token, trigger, &step)
            triggerNeedsUnlessWaiting(decision.run, trigger.action, params: trigger.params, peer: trigger.peer, &step)
            // The runs it replaces stop now, in a store item of their own: a full store refuses
            // the new run's creation, never the end of a run it already has.
            if case let .replaced(id, stopping) = decision {
                step.beginItem()
                stopReplaced(stopping, by: id, &step)
            }
        case let .shared(decision):
            share(decision, decided.record, token, trigger, &step)
        }
    }

    /// What the engine knows of `key` for a trigger of `action` (of schedule slot `at`): its
    /// view (`KeyDecision.view`) of the key's facts as this host's flights give them. Hooks ask it too.
    func keyView(_ key: String, _ action: Action, slot at: Timestamp?, at now: Timestamp, uptime: Duration?) -> KeyDecision.View {
        KeyDecision.view(keyFacts(key, action, slot: at, at: now, uptime: uptime))
    }

    /// The key's facts, as the fleet reads them from rows: its slot, the line's runs (their
    /// params), the schedule slot's run, the windows of its debounced runs (for a debounced
    /// trigger), its last success (of the same action), the action's pause as kept (the view
    /// says whether it holds at `now`, as for a fleet's rows), and its rate from this host's table.
    func keyFacts(_ key: String, _ action: Action, slot at: Timestamp?, at now: Timestamp, uptime: Duration?) -> KeyFacts {
        var facts = KeyFacts(slot: table.slot(of: key), now: now, pause: pauses[action.name],
                             rate: action.rateClaim(key: key).map { table.rate($0, key: key, at: now) })
        facts.uptime = uptime
        for id in facts.slot.line { note(id, in: &facts) }
        if let at, let known = slots.run(for: .init(action: action.name, at: at)) {
            facts.slotRun = known.id
            note(known.id, in: &facts)
        }
        if action.debounce != nil {
            for case let id? in [facts.slot.holder] + facts.slot.line.map(Optional.some) {
                guard let window = flights[id]?.debounce else { continue }
                facts.windows[id] = window
                note(id, in: &facts)
            }
        }
        if successes[key]?.action == action.name {
            facts.lastSuccess = lastSuccess(of: key)
        }
        return facts
    }

    /// Run `id`'s phase and params in `facts`, where this host has it in flight.
    private func note(_ id: Int64, in facts: inout KeyFacts) {
        guard facts.runs[id] == nil, let flight = flights[id] else { return }
        facts.runs[id] = KeyFacts.Run(phase: flight.machine.phase, lastSeq: flight.seq, params: flight.run.params)
    }

    /// The key's last success, with when it ended on the boot's clock where this process saw it.
    public func lastSuccess(of key: String) -> KeyDecision.LastSuccess? {
        guard let success = successes[key], let ended = success.endedAt else { return nil }
        let uptime = successUptimes[key].flatMap { $0.run == success.id ? $0.at : nil }
        return KeyDecision.LastSuccess(run: success.id, at: ended, uptime: uptime)
    }

    /// The runs a replace stops: the one place a replaced run is stopped on one machine.
    mutating func stopReplaced(_ stopping: [Int64], by id: Int64, _ step: inout Step) {
        for old in stopping { drive(old, .stop(.replaced(by: id)), &step) }
    }

    /// A trigger that shares a run: its record (and delivery), then its answer; a rejection is
    /// answered with the run that holds the key.
    private mutating func share(_ decision: FlightTable.Decision, _ record: TriggerRecord.Decision?, _ token: Token, _ trigger: Trigger,
                                _ step: inout Step) {
        let id = decision.run
        if let record { step.entries.append(.trigger(self.record(trigger, run: id, record, at: step.now))) }
        let live = flights[id]?.snapshot
        if case let .rejected(_, line) = decision {
            return step.answer(token, .failed(.busy(run: id, action: trigger.action.name, phase: live?.phase ?? .queued,
                                                    since: live?.startedAt ?? live?.queuedAt ?? step.now, line: line)))
        }
        recordDelivery(of: trigger, run: id, &step)
        step.after.append(.ticket(token, decision, fallback: live ?? known(id, trigger) ?? placeholder(id, trigger, at: step.now)))
    }

    /// A run shared that is no longer in flight, as last known: the slot's run or the key's last success.
    private func known(_ id: Int64, _ trigger: Trigger) -> RunSnapshot? {
        if let at = trigger.slot, let run = slots.run(for: .init(action: trigger.action.name, at: at)), run.id == id { return run }
        if let success = successes[trigger.key], success.id == id { return success }
        return nil
    }

    private mutating func create(_ decision: FlightTable.Decision, _ window: DebounceWindow?, _ token: Token, _ trigger: Trigger,
                                 _ step: inout Step) {
        let id = decision.run
        let detail = KeyDecision.queuedDetail(decision, via: trigger.via, window: window)
        // The estimate in the first storage (an action that ran before has one); the other
        // three in one more, none when none is set (issue 39).
        var run = placeholder(id, trigger, at: step.now, estimate: estimates.median(trigger.action.name))
        let approval = newApproval(trigger.action, at: step.now)
        if trigger.via != nil || trigger.slot != nil || approval != nil {
            run.update { run in (run.via, run.slot, run.approval) = (trigger.via, trigger.slot, approval) }
        }
        let transition = Transition(runID: id, seq: 1, from: nil, to: .queued, at: step.now, detail: detail)
        slots.record(run)
        var flight = Flight(run: run, machine: RunMachine(retries: trigger.action.retry.attempts),
                            action: trigger.action, runner: trigger.runner, seq: 1, debounce: window, secrets: trigger.secrets)
        flight.origin = trigger.peer?.uid
        flights[id] = flight
        if let window { hold(id, window, &step) }
        timePause(id, trigger.action.name, &step)
        step.entries.append(.created(run, transition))
        awaitApproval(id, trigger.action, &step)
        recordDelivery(of: trigger, run: id, &step)
        // It starts once its creation is durable, if its key and a slot are free then: `loading`
        // is stamped when the process starts, never when the trigger came (a creation can wait
        // for the store). The answer goes out after the start, with the run as it is then.
        step.after += [.publish(RunUpdate(run: run, transition: transition)), .durable(id),
                       .ticket(token, decision, fallback: run)]
    }

    /// A webhook trigger's delivery, in the item that creates or shares its run: durable together.
    func recordDelivery(of trigger: Trigger, run: Int64, _ step: inout Step) {
        if let delivery = trigger.delivery { step.entries.append(.delivery(delivery, runID: run, at: step.now)) }
    }

    private func placeholder(_ id: Int64, _ trigger: Trigger, at now: Timestamp, estimate: Int64? = nil) -> RunSnapshot {
        RunSnapshot(id: id, action: trigger.action.name, key: trigger.key, phase: .queued, policy: trigger.policy,
                    params: trigger.params, trigger: trigger.peer, queuedAt: now, estimate: estimate)
    }

    func record(_ trigger: Trigger, run: Int64?, _ decision: TriggerRecord.Decision, at now: Timestamp) -> TriggerRecord {
        TriggerRecord(runID: run, action: trigger.action.name, key: trigger.key, decision: decision, policy: trigger.policy,
                      peer: trigger.peer, at: now, params: trigger.params, via: trigger.via)
    }

    // MARK: Attempts and timers

    mutating func started(_ id: Int64, _ attempt: Int, _ group: ProcessGroup?, _ step: inout Step) {
        guard let group, attemptState(id)?.live == attempt else { return }
        step.entries.append(.processGroup(runID: id, pgid: group.pgid, identity: group.identity))
    }

    /// Progress is told at once unless it was told less than `progressInterval` ago; then the
    /// latest is held and told when the window ends (latest wins).
    mutating func progressed(_ id: Int64, _ attempt: Int, _ progress: Progress, _ step: inout Step) {
        guard var flight = flights[id], flight.live == attempt else { return }
        flight.run.progress = progress
        if let told = flight.progressToldAt, step.now - told < Self.progressInterval {
            if !flight.progressHeld {
                flight.progressHeld = true
                step.emit(.schedule(run: id, .progress, after: Self.progressInterval - (step.now - told)))
            }
        } else {
            flight.progressToldAt = step.now
            step.emit(.publish(RunUpdate(run: flight.run, transition: nil)))
        }
        flights[id] = flight
    }

    mutating func exited(_ id: Int64, _ attempt: Int, _ outcome: AttemptOutcome, _ step: inout Step) {
        guard let state = attemptState(id), state.live == attempt, state.handOver != .done else { return }
        // Ended before its hand-over was answered: that answer will be ignored (no live attempt).
        let wasAsked = state.handOver == .asked
        if let index = flights.index(forKey: id) { (flights.values[index].live, flights.values[index].handOver) = (nil, nil) }
        if !outcome.output.isEmpty || outcome.result.started {
            step.entries.append(.output(runID: id, tail: outcome.output, truncated: outcome.truncated))
        }
        drive(id, .exited(outcome.result), &step)
        if wasAsked { endedWhileAsked(id, &step) }
        if !waitsForWrites { drainIfDone(&step) }
    }

    mutating func fired(_ id: Int64, _ timer: Timer, _ step: inout Step) {
        guard let flight = flights[id], flight.handOver != .done else { return }
        switch timer {
        case .timeout:
            if let limit = flight.action.timeout { drive(id, .stop(.timeout(after: limit)), &step) }
        case let .backoff(attempt):
            if flight.machine.state == .retrying(attempt: attempt) { drive(id, .backoffElapsed, &step) }
        case .debounce:
            windowEnded(id, &step)
        case .pauseEnd:
            pauseTimerFired(id, flight.action.name, &step)
        case .rateLimit:
            rateTimerFired(id, &step)
        case .approval:
            approvalTimerFired(id, &step)
        case .progress:
            guard flight.progressHeld, !flight.isOver else { return }
            var told = flight
            told.progressHeld = false
            told.progressToldAt = step.now
            flights[id] = told
            step.emit(.publish(RunUpdate(run: told.run, transition: nil)))
        }
    }

    // MARK: Cancel and shutdown

    /// Stops the runs named: a queued or retrying run ends at once, a loading one once its
    /// processes are gone. Answered with every run it stopped, as each is now.
    /// `principal`: a group principal's name (`Peer.principal`), kept in the cancel's transition as `via`.
    mutating func cancel(_ token: Token, _ target: CancelTarget, by uid: UInt32?, principal: String? = nil, _ step: inout Step) {
        let ids: [Int64]
        switch target {
        case let .run(id):
            guard let flight = flights[id], !flight.isOver else { return step.answer(token, .failed(.unknownRun(id))) }
            ids = [id]
        case let .action(name, key):
            ids = flights.values.filter { !$0.isOver && $0.run.action == name && (key == nil || $0.run.key == key) }
                .map(\.run.id).sorted()
        }
        for id in ids { drive(id, .stop(.cancelled(by: uid, principal: principal)), &step) }
        step.answer(token, .cancelled(ids.compactMap { flights[$0]?.snapshot }))
    }

    mutating func beginShutdown(_ step: inout Step) {
        guard mode == .accepting else { return }
        mode = .draining
        handOverSurvivors(&step)
        drainIfDone(&step)
    }

    /// A second stop signal: the runs still loading stop now, and the drain no longer waits for
    /// their ends to be durable.
    mutating func abandonWrites(_ step: inout Step) {
        guard mode == .draining else { return }
        waitsForWrites = false
        stopActive(.shutdown, &step)
        drainIfDone(&step)
    }

    /// Drained once nothing is left to wait for: no run loading, retrying or (unless writes are
    /// abandoned) ended but not yet durable.
    mutating func drainIfDone(_ step: inout Step) {
        guard mode == .draining else { return }
        if activeCount == 0 {
            mode = .stopped
            step.emit(.drained)
        } else if !waitsForWrites, undecidedCount == 0 {
            mode = .stopped
            step.emit(.drainedUnwritten)
        }
    }

    /// Stops every run loading or retrying (shutdown grace over), but those handed over to their
    /// shims or on their way; queued runs stay queued.
    mutating func stopActive(_ stop: RunMachine.Stop, _ step: inout Step) {
        let active = flights.values.filter { ($0.machine.phase == .loading || $0.machine.phase == .retrying) && $0.handOver == nil }
        for id in active.map(\.run.id).sorted() { drive(id, .stop(stop), &step) }
    }
}
