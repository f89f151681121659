extension ConductorState {
    // MARK: Hooks

    /// A run's end is decided: fires the hooks it qualifies for (`HookTargets.fired`), each a
    /// trigger of its hook's action under that action's own policy and cooldown, written in the
    /// same store item as the end, so that the end and its hooks' triggers are durable together
    /// (a crash between them loses neither: recovery starts the queued hook runs). A hook run's
    /// own end fires its action's hooks only where that action says `on.chain`. While draining,
    /// the hook run is still created: it waits queued, durable, for the next start.
    mutating func fireHooks(_ run: RunSnapshot, _ action: Action, output: [UInt8], _ step: inout Step) {
        let hooks = action.hooks
        guard !hooks.isEmpty, run.phase == .success || run.phase == .failure else { return }
        // A fleet: the key's last outcome and the hook keys' slots are rows another host may
        // hold; the end's transaction decides the hooks with them (`HookFiring`).
        if storeDecidesHooks {
            if let firing = HookFiring(run: run, hooks: hooks) { step.entries.append(.hooks(firing)) }
            return
        }
        let previous = outcomes[run.key]
        if hooks.targets[.change] != nil { outcomes[run.key] = run.phase }
        if !hooks.fire(for: run) { return }
        for event in hooks.fired(by: run.phase, previous: previous) {
            guard let target = hooks.targets[event] else { continue }
            let cause = HookCause(run: run.id, action: run.action, event: event)
            triggerHook(target, HookContext(cause: cause, run: run, output: output), &step)
        }
    }

    /// Seeds the last outcome of each key whose action has a `change` hook from the history (at
    /// start), so that a restart compares against the run before it; a later run of a key wins.
    public mutating func remember(outcomes runs: [RunSnapshot]) {
        var latest: [String: Int64] = [:]
        for run in runs where run.phase == .success || run.phase == .failure {
            guard latest[run.key].map({ $0 < run.id }) ?? true else { continue }
            latest[run.key] = run.id
            outcomes[run.key] = run.phase
        }
    }

    /// The last output bytes this step writes for a run: the tail of the attempt that ended it.
    func outputWritten(for id: Int64, _ step: Step) -> [UInt8] {
        for case let .output(runID, tail, _) in step.entries.reversed() where runID == id { return tail }
        return []
    }

    /// One hook's trigger, decided as a trigger from nobody would be (`KeyDecision`): a new run
    /// (its creation in this item, started once durable), or a record against the run it joins,
    /// coalesces into, debounces into, is rejected by or is cooled by.
    mutating func triggerHook(_ target: HookTarget, _ context: HookContext, _ step: inout Step) {
        let hookAction = target.action
        var slot = table.slot(of: target.key)
        let decided = KeyDecision.decide(KeyDecision.Asked(hook: hookAction, params: target.params), keyView(target.key, hookAction, slot: nil, at: step.now, uptime: step.uptime),
                                         slot: &slot, candidate: { nextRunID })
        switch decided {
        case .refused:
            return
        case .paused:
            step.entries.append(.trigger(hookRecord(target, context, run: nil, .paused, at: step.now)))
        case .rateLimited:
            step.entries.append(.trigger(hookRecord(target, context, run: nil, .rateLimited, at: step.now)))
        case let .debounced(run, window):
            push(run, to: window, &step)
            step.entries.append(.trigger(hookRecord(target, context, run: run, .debounced, at: step.now)))
        case let .shared(decision):
            if let record = decided.record { step.entries.append(.trigger(hookRecord(target, context, run: decision.run, record, at: step.now))) }
        case let .created(decision, window):
            // A need that would be refused: the hook makes no run (nor stops one), its need's refusal recorded.
            if let refusal = needRefusal(hookAction, params: target.params, at: step.now, uptime: step.uptime) {
                let via = KeyDecision.NeedRefusal.via(hook: hookAction.name, context.cause)
                if let record = refusal.record(via: via, peer: nil, at: step.now) { step.entries.append(.trigger(record)) }
                return
            }
            nextRunID += 1
            releaseIfOver(hookAction.name, at: step.now)
            table.apply(decision, key: target.key, slot: slot, action: hookAction.name, locks: hookAction.locks,
                        gated: hookAction.debounce != nil, rate: hookAction.rateClaim(key: target.key))
            createHookRun(decision, window, target, context, &step)
            if case let .replaced(id, stopping) = decision { stopReplaced(stopping, by: id, &step) }
        }
    }

    /// A hook's new run: queued in this item, started once durable.
    private mutating func createHookRun(_ decision: FlightTable.Decision, _ window: DebounceWindow?, _ target: HookTarget,
                                        _ context: HookContext, _ step: inout Step) {
        let (id, hookAction, via) = (decision.run, target.action, context.cause.description)
        var run = RunSnapshot(id: id, action: hookAction.name, key: target.key, phase: .queued, policy: hookAction.policy,
                              params: target.params, trigger: nil, queuedAt: step.now)
        let (estimate, approval) = (estimates.median(hookAction.name), newApproval(hookAction, at: step.now))
        run.update { run in (run.via, run.hook, run.estimate, run.approval) = (via, context.cause, estimate, approval) }
        let transition = Transition(runID: id, seq: 1, from: nil, to: .queued, at: step.now,
                                    detail: KeyDecision.queuedDetail(decision, via: via, window: window))
        flights[id] = Flight(run: run, machine: RunMachine(retries: hookAction.retry.attempts), action: hookAction,
                             runner: nil, seq: 1, hook: context, debounce: window)
        let firing = origin(of: context.cause.run)
        flights[id]?.origin = firing
        if let window { hold(id, window, &step) }
        timePause(id, hookAction.name, &step)
        step.entries.append(.created(run, transition))
        if let firing { step.entries.append(.origin(runID: id, uid: firing)) }
        awaitApproval(id, hookAction, &step)
        step.after += [.publish(RunUpdate(run: run, transition: transition)), .durable(id)]
        triggerNeedsUnlessWaiting(id, hookAction, params: target.params, peer: nil, &step)
    }

    private func hookRecord(_ target: HookTarget, _ context: HookContext, run: Int64?, _ decision: TriggerRecord.Decision,
                            at now: Timestamp) -> TriggerRecord {
        TriggerRecord(runID: run, action: target.action.name, key: target.key, decision: decision, policy: target.action.policy,
                      peer: nil, at: now, params: target.params, via: context.cause.description)
    }
}
