/// What recovery did with the runs a previous daemon left in flight.
public struct RecoverySummary: Sendable, Equatable {
    /// Runs that were loading or retrying and now end as `failure`, reason `interrupted`; and
    /// runs that would be queued again but whose secret params' values are gone (reason `secret`).
    public var interrupted: [Int64] = []
    /// Runs that were loading or retrying and start again (`onInterrupt: restart`).
    public var restarted: [Int64] = []
    /// Runs that were queued and are queued again, in their original order.
    public var requeued: [Int64] = []
    /// Runs that cannot go on: their action is gone from the config, their key's line is already
    /// full, or a stop (a cancel, a replace: `runs.stop`) was asked of them before they ended.
    public var dropped: [Int64] = []
    /// Processes of unfinished runs that were still alive and were killed.
    public var killedProcesses = 0
    /// Runs whose shim outlived the previous batond: in flight again, or ended from the status it kept.
    public var adopted: [Int64] = []

    public init() {}
}

extension ConductorState {
    /// Takes over the runs a previous daemon left unfinished (their processes already killed):
    /// ends or restarts the interrupted ones and queues the queued ones again, in their original
    /// order, each decision a recorded transition. Answered once all of it is durable.
    mutating func recover(_ token: Token, _ runs: [RecoveredRun], _ step: inout Step) {
        var summary = RecoverySummary()
        for recovered in runs {
            let run = recovered.unfinished.run
            nextRunID = max(nextRunID, run.id + 1)
            let action = recovered.action
            let facts = RecoveryDecision.facts(recovered.unfinished, action: action, surviving: recovered.surviving != nil)
            switch (RecoveryDecision.decide(facts), action) {
            case (.endStopped, _):
                let stop = recovered.unfinished.stop ?? .shutdown
                let ended = end(recovered.unfinished, stop.phase, stop.detail, &step)
                if let action {
                    fireHooks(ended, action, output: [], &step)
                    countFailures(ended, action, &step)
                }
                summary.dropped.append(run.id)
            case (.drop, _), (_, nil):
                end(recovered.unfinished, .cancelled,
                    TransitionDetail(reason: "removed", error: "action \(run.action) is no longer configured"), &step)
                summary.dropped.append(run.id)
            case let (.adopt, action?):
                adoptSurvivor(recovered.unfinished, action, recovered.surviving!, &step)
                // A stop asked before the previous batond went (its row's `stop`): the survivor is
                // stopped as asked, and ends as the stop says (review-fleetrecovery12 M1).
                if let stop = recovered.unfinished.stop { drive(run.id, .stop(stop), &step) }
                summary.adopted.append(run.id)
            case let (.resumeRetrying, action?):
                resumeRetrying(recovered.unfinished, action, due: recovered.unfinished.retryDue!, &step)
                summary.adopted.append(run.id)
            case (.endRefused, _):
                // One machine runs its own config only: it refuses no definition (`Facts.refused` is a fleet's).
                end(recovered.unfinished, .failure, TransitionDetail(reason: "definition", error: "action \(run.action)'s definition is refused here"), &step)
                summary.interrupted.append(run.id)
            case let (.endSecret, action?):
                // A secret's value lived only in the previous daemon's memory: the run cannot start
                // again with it, nor without it. It ends `failure` and says why.
                let ended = end(recovered.unfinished, .failure, RecoveryDecision.secretDetail(action, phase: run.phase), &step)
                fireHooks(ended, action, output: [], &step)
                countFailures(ended, action, &step)
                summary.interrupted.append(run.id)
            case let (.interrupt, action?):
                let ended = end(recovered.unfinished, .failure,
                                TransitionDetail(reason: "interrupted", error: "batond stopped while the run was \(run.phase.rawValue)"), &step)
                fireHooks(ended, action, output: [], &step)
                // A failure like any end's: the Nth in a row (the streak seeded from the history
                // before recovery) pauses the action now, and the runs queued again wait.
                countFailures(ended, action, &step)
                summary.interrupted.append(run.id)
            case let (.requeue(restart), action?):
                if requeue(recovered.unfinished, action, reason: restart ? "restarted" : "recovered", &step) {
                    if restart { summary.restarted.append(run.id) } else { summary.requeued.append(run.id) }
                } else {
                    summary.dropped.append(run.id)
                }
            }
        }
        // Answered at once: the decisions are made, and their writes go before anything later
        // (a full disk holds them in memory; batond serves meanwhile instead of hanging at start).
        step.emit(.answer(token, .recovered(summary)))
        // The runs that wait for others wait again, for the same runs: decided from how each is now.
        var ended: [Int64: RunSnapshot] = [:]
        for case let .transition(transition) in step.entries where transition.to.isTerminal {
            ended[transition.runID] = RunSnapshot(id: transition.runID, action: "", key: "", phase: transition.to, policy: .join, params: [:],
                                                  trigger: nil, queuedAt: transition.at).applying(transition)
        }
        recoverNeeds(runs, ended: ended, &step)
        // The runs of a paused action wait (a timed one's, until its end); a pause over meanwhile holds none.
        for pause in pauses.values {
            if pause.holds(at: step.now) { hold(pause, &step) } else { pauseMayHaveEnded(pause.action, &step) }
        }
        admit(&step)
    }

    @discardableResult
    private mutating func end(_ unfinished: UnfinishedRun, _ phase: Phase, _ detail: TransitionDetail, _ step: inout Step) -> RunSnapshot {
        let transition = Transition(runID: unfinished.run.id, seq: unfinished.lastSeq + 1, from: unfinished.run.phase,
                                    to: phase, at: step.now, detail: detail)
        step.entries.append(.transition(transition))
        let ended = unfinished.run.applying(transition)
        // Told once durable, as every end is: the log and journal say how the run ended too.
        step.after.append(.publish(RunUpdate(run: ended, transition: transition)))
        if lastEnded[ended.action].map({ $0.id < ended.id }) ?? true { lastEnded[ended.action] = ended }
        return ended
    }

    /// Queues a run again under its key: the first holds it, the next wait in its line in the
    /// order they come (their original order), up to the action's `queueDepth`; a further queued
    /// run of it is cancelled as superseded. Returns whether the run was queued.
    private mutating func requeue(_ unfinished: UnfinishedRun, _ action: Action, reason: String, _ step: inout Step) -> Bool {
        let run = unfinished.run
        // A debounced run waits out a window again from the restart (`RecoveryDecision.window`).
        let window = run.phase == .queued ? RecoveryDecision.window(action, queuedAt: run.queuedAt, at: step.now) : nil
        let gated = window?.isOpen(at: step.now) ?? false
        // Decided as a live `queue` trigger of the key would be (`KeyDecision.recover`).
        var slot = table.slot(of: run.key)
        guard let decision = KeyDecision.recover(run.id, of: action, slot: &slot, at: step.now) else {
            end(unfinished, .cancelled, TransitionDetail(reason: "superseded", error: "the line of key \(run.key) was already full"), &step)
            return false
        }
        // A run that started before the crash (taken back to run again) made its start then: the
        // history's seed counts it, and it is neither counted again nor held back by it.
        table.apply(decision, key: run.key, slot: slot, action: action.name, locks: action.locks, gated: gated,
                    rate: run.startedAt == nil ? action.rateClaim(key: run.key) : nil)
        var transition = Transition(runID: run.id, seq: unfinished.lastSeq + 1, from: run.phase, to: .queued, at: step.now,
                                    detail: TransitionDetail(reason: reason))
        transition.detail.debounce = window?.deadline.rawValue
        let snapshot = run.applying(transition)
        flights[run.id] = Flight(run: snapshot, machine: RunMachine(retries: action.retry.attempts), action: action,
                                 runner: nil, seq: transition.seq, hook: unfinished.hook, debounce: window)
        // As the history kept it (`JournalEntry.origin`), else its trigger's, else (a row from
        // before schema 15) the origin of the run that fired it, where that one is in flight.
        let firing = unfinished.hook.flatMap { self.origin(of: $0.cause.run) }
        flights[run.id]?.origin = unfinished.origin ?? run.trigger?.uid ?? firing
        if let window, gated { hold(run.id, window, &step) }
        step.entries.append(.transition(transition))
        // After its transition: a waived wait triggers the run's needs, which may end it.
        awaitApprovalAgain(run.id, run.approval, action, &step)
        step.after.append(.publish(RunUpdate(run: snapshot, transition: transition)))
        // The run's row is durable from its first life; only its new transition is being written,
        // and anything it does next is written after it.
        table.markDurable(run.id)
        return true
    }
}

extension ConductorState {
    /// A run whose shim outlived the previous batond: in flight again, holding its key, its
    /// attempt attached to (not spawned), with the retries it had left. Its timeout counts from
    /// the run's first start (`timeoutDelay`).
    private mutating func adoptSurvivor(_ unfinished: UnfinishedRun, _ action: Action, _ surviving: SurvivingAttempt, _ step: inout Step) {
        let id = unfinished.run.id
        // Its attempt keeps its number, and the retries after it are those it had left.
        var machine = RunMachine(retries: action.retry.attempts)
        let effects = machine.resume(attempt: surviving.attempt)
        var run = unfinished.run
        run.estimate = estimates.median(run.action)
        flights[id] = Flight(run: run, machine: machine, action: action, runner: nil, seq: unfinished.lastSeq, hook: unfinished.hook)
        flights[id]?.surviving = surviving
        // Its locks are held again: another action sharing them waits, as it did before the crash.
        table.adoptRunning(id, key: run.key, action: action.name, locks: action.locks)
        for case let .launch(attempt) in effects { perform(id, .launch(attempt: attempt), &step) }
    }

    /// A run left waiting to retry goes on waiting, where its action survives restarts (no process
    /// is lost: its last attempt's end is in the history) and nothing of it lived in batond's
    /// memory only (a secret's value, a hook's output file).
    static func mayResumeRetrying(_ unfinished: UnfinishedRun, _ action: Action) -> Bool {
        action.mayOutliveBatond && unfinished.hook == nil && unfinished.run.attempts > 0
    }

    /// In flight again, retrying, holding its key and its locks: its backoff ends when it was due
    /// (at once, where that is past), and its timeout counts from its first start. Nothing is written.
    private mutating func resumeRetrying(_ unfinished: UnfinishedRun, _ action: Action, due: Timestamp, _ step: inout Step) {
        let id = unfinished.run.id
        let attempt = unfinished.run.attempts
        var machine = RunMachine(retries: action.retry.attempts)
        machine.resumeRetrying(after: attempt)
        var run = unfinished.run
        run.estimate = estimates.median(run.action)
        flights[id] = Flight(run: run, machine: machine, action: action, runner: nil, seq: unfinished.lastSeq, hook: unfinished.hook)
        flights[id]?.outputResumesAt = unfinished.outputTotal ?? 0
        table.adoptRunning(id, key: run.key, action: action.name, locks: action.locks)
        step.emit(.schedule(run: id, .backoff(attempt), after: max(due - step.now, .zero)))
        if let timeout = action.timeout {
            let ran = run.startedAt.map { step.now - $0 } ?? .zero
            step.emit(.schedule(run: id, .timeout, after: max(timeout - ran, .zero)))
        }
    }

    /// Runs a run the fleet started: its `loading` is durable already, so its first attempt
    /// launches at once and only what follows is written from here.
    mutating func adopt(_ token: Token, _ adopted: AdoptedRun, _ step: inout Step) {
        let id = adopted.run.id
        guard flights[id] == nil else { return step.answer(token, .attached(flights[id]?.snapshot)) }
        // A secret's value lives only in the memory of the host its trigger came to: another host
        // (one that took the run over from a host that stopped) cannot run it with it, nor without.
        if let secret = adopted.action.secretParams.first(where: { adopted.run.params[$0] == Action.maskedValue && adopted.secrets[$0] == nil }) {
            let ended = end(UnfinishedRun(run: adopted.run, lastSeq: adopted.seq), .failure, TransitionDetail(reason: "secret", error:
                "the run started on a host that never had the value of its secret param \(secret) (kept in the memory of the host its trigger came to)"),
                &step)
            fireHooks(ended, adopted.action, output: [], &step)
            // A failure like any end's (`pauseAfterFailures`, counted by the fleet's store).
            countFailures(ended, adopted.action, &step)
            return step.answer(token, .attached(ended))
        }
        if let due = adopted.retryDue, adopted.run.phase == .retrying {
            var unfinished = UnfinishedRun(run: adopted.run, lastSeq: adopted.seq)
            unfinished.outputTotal = adopted.outputTotal
            resumeRetrying(unfinished, adopted.action, due: due, &step)
            nextRunID = max(nextRunID, id + 1)
            step.answer(token, .attached(flights[id].map(live) ?? adopted.run))
            if mode != .accepting { drive(id, .stop(.shutdown), &step) }
            return
        }
        var machine = RunMachine(retries: adopted.action.retry.attempts)
        let effects = machine.handle(.start)
        var run = adopted.run
        run.estimate = estimates.median(run.action)
        flights[id] = Flight(run: run, machine: machine, action: adopted.action, runner: nil, seq: adopted.seq, hook: adopted.hook)
        flights[id]?.secrets = adopted.secrets
        table.adoptRunning(id, key: run.key)
        // Its start counts in this host's view of its rate limit (`status`; the fleet decides from its rows).
        if let claim = adopted.action.rateClaim(key: run.key), let started = run.startedAt { table.rememberStart(claim, at: started) }
        nextRunID = max(nextRunID, id + 1)
        for case let .launch(attempt) in effects { perform(id, .launch(attempt: attempt), &step) }
        step.answer(token, .attached(run))
        // Shutting down: it stops with the others when the grace is over.
        if mode != .accepting { drive(id, .stop(.shutdown), &step) }
    }
}

/// A run the fleet started: its row already says `loading` (attempt 1, transition `seq`), written
/// in the transaction that took its key; this host runs it from there.
public struct AdoptedRun: Sendable, Equatable {
    public var run: RunSnapshot
    public var seq: Int
    public var action: Action
    /// What a hook run is told of the run that fired it (rebuilt from that run's row and output).
    public var hook: HookContext?
    /// Its secret params' values, where this host has them (the trigger came to it): a run of an
    /// action with secret params started without them ends `failure`, reason `secret`.
    public var secrets: [String: String]
    /// A run left waiting to retry by a host that is gone (`RecoveryDecision.resumeRetrying`):
    /// when its next attempt is due, and the bytes of output its row holds. Nil: it starts now.
    public var retryDue: Timestamp?
    public var outputTotal: Int64?

    public init(run: RunSnapshot, seq: Int, action: Action, hook: HookContext? = nil, secrets: [String: String] = [:]) {
        self.run = run
        self.seq = seq
        self.action = action
        self.hook = hook
        self.secrets = secrets
    }
}
