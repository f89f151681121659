extension ConductorState {
    /// What to do once a group of writes is durable (or has failed).
    enum AfterCommit: Sendable, Equatable {
        /// Answer a caller; a failed commit answers its error instead.
        indirect case answer(Token, Answer)
        /// Answer a trigger with the run as it is when the answer goes out.
        indirect case ticket(Token, FlightTable.Decision, fallback: RunSnapshot)
        /// Tell waiters and watchers about a committed transition.
        indirect case publish(RunUpdate)
        /// The run's creation is durable: it may start. A failure abandons the run.
        case durable(Int64)
        /// The run's terminal transition is durable: close it.
        case ended(Int64)
        /// This conductor's pause or resume of the action is durable (or refused): a read of the
        /// fleet's pauses begun from now on sees it (`seen(pauses:readAt:)`).
        case pauseDurable(String)
        /// A run left waiting to retry at shutdown once its attempt ended (`endedWhileAsked`):
        /// its `retrying` is durable, the drain may end.
        case leftRetrying(Int64)
        /// The attempt's `loading` is durable: its process may start (`launchOnceDurable`).
        indirect case launch(Launch)
    }

    /// What one event decides: the writes, what follows their commit, and the effects to perform now.
    /// The writes are one store item, or several when an item must not be refused with another.
    struct Step {
        let now: Timestamp
        /// The boot's clock, where the caller reads it (cooldowns are measured on it).
        let uptime: Duration?
        var entries: [JournalEntry] = []
        var after: [AfterCommit] = []
        /// Items closed by `beginItem`, in order.
        var sealed: [(entries: [JournalEntry], after: [AfterCommit])] = []
        /// What to perform now, added by `emit`.
        fileprivate(set) var effects: [Effect] = []

        init(now: Timestamp, uptime: Duration? = nil) {
            self.now = now
            self.uptime = uptime
        }

        /// Adds an effect to perform now.
        mutating func emit(_ effect: Effect) {
            makeRoom()
            effects.append(effect)
        }

        /// Room for a step's usual effects (a write, an answer, a publish...), made by its first:
        /// grown from empty, the array was made again about 10 times a run; a step that decides
        /// nothing (a held progress report, a pause read with nothing new) allocates none (issue 39).
        fileprivate mutating func makeRoom() {
            if effects.capacity == 0 { effects.reserveCapacity(4) }
        }

        /// Answers once this step's writes are durable (at once when it has none).
        mutating func answer(_ token: Token, _ answer: Answer) { after.append(.answer(token, answer)) }

        /// Starts a new store item: what follows is written (and, when the store is full,
        /// refused or kept) apart from what came before.
        mutating func beginItem() {
            guard !entries.isEmpty else { return }
            sealed.append((entries, after))
            (entries, after) = ([], [])
        }
    }

    /// Turns a step into effects: its writes first, as one store item; what follows them is kept
    /// until they commit, or done now when there are none.
    mutating func finish(_ step: inout Step) -> [Effect] {
        if step.entries.isEmpty, let last = step.sealed.popLast() {
            // What follows no write of its own waits for the last one.
            step.entries = last.entries
            step.after = last.after + step.after
        }
        guard !step.entries.isEmpty else {
            for item in step.after { follow(item, nil, &step) }
            return step.effects
        }
        step.sealed.append((step.entries, step.after))
        step.makeRoom()
        // The writes go first, each put in its place (the effects are moved behind them, not
        // copied; no array of the writes is made: issue 39).
        for (index, item) in step.sealed.enumerated() {
            let id = nextCommit
            nextCommit += 1
            pending[id] = item.after
            step.effects.insert(.write(item.entries, id), at: index)
        }
        return step.effects
    }

    /// A group of writes is durable (or failed): do what waited for it. New writes this causes
    /// (the next run's `loading`, say) go into the step, and so into the next group.
    mutating func committed(_ id: CommitID, _ failure: BatonError?, _ step: inout Step) {
        guard let items = pending.removeValue(forKey: id) else { return }
        for item in items { follow(item, failure, &step) }
    }

    mutating func follow(_ item: AfterCommit, _ failure: BatonError?, _ step: inout Step) {
        switch item {
        case let .answer(token, answer):
            step.emit(.answer(token, failure.map { .failed($0) } ?? answer))
        case let .ticket(token, decision, fallback):
            let run = decision.run
            step.emit(.answer(token, failure.map { .failed($0) } ?? .ticket(decision, snapshot(of: run) ?? fallback)))
        case let .publish(update):
            if failure == nil {
                var told = update
                addLockWait(to: &told)
                addLive(to: &told.run)
                step.emit(.publish(told))
            }
        case let .durable(run):
            if failure == nil {
                table.markDurable(run)
                admit(&step)
            } else {
                abandon(run, &step)
            }
        case let .ended(run):
            close(run, &step)
        case let .pauseDurable(action):
            pauseChanged[action] = step.now
        case .leftRetrying:
            drainIfDone(&step)
        case let .launch(launch):
            launchOnceDurable(launch, failure, &step)
        }
    }

    /// Write-ahead start: an attempt's process starts only once its `loading` is durable, so that a
    /// crash never leaves a process of a run the history calls queued (or retrying), which recovery
    /// would start again. An attempt whose start could not be written ends as one that never started.
    private mutating func launchOnceDurable(_ launch: Launch, _ failure: BatonError?, _ step: inout Step) {
        guard let index = flights.index(forKey: launch.run), flights.values[index].live == launch.attempt,
              flights.values[index].launchWaits else { return }
        flights.values[index].launchWaits = false
        if let failure { return neverStarted(launch.run, "its start could not be recorded: \(failure)", &step) }
        step.emit(.launch(launch))
        armTimeout(launch, &step)
        // Shutdown began while its start was being written: handed over now that it runs, as the
        // shutdown asked of the runs running then (the conductor launches before it hands over).
        if mode == .draining, handsOver, Self.mayHandOver(flights.values[index]) {
            flights.values[index].handOver = .asked
            step.emit(.handOver(run: launch.run, attempt: launch.attempt))
        }
    }

    /// Ends the live attempt of a run whose process was never started (stopped while its start was being written).
    private mutating func neverStarted(_ id: Int64, _ error: String, _ step: inout Step) {
        guard let index = flights.index(forKey: id), let attempt = flights.values[index].live else { return }
        flights.values[index].launchWaits = false
        exited(id, attempt, AttemptOutcome(result: AttemptResult(succeeded: false, started: false, error: error)), &step)
    }

    /// Forgets a run whose creation could not be written: nobody was told it exists.
    mutating func abandon(_ id: Int64, _ step: inout Step) {
        guard let flight = flights.removeValue(forKey: id) else { return }
        table.ended(id)
        needBook.forget(id)
        approvals[id] = nil
        // A run that joined it (in an item of its own) waited for a run that never was.
        decideWaits(on: id, phase: .cancelled, reason: "unwritten", &step)
        slots.forget(flight.run)
        step.emit(.close(run: id))
        admit(&step)
    }

    /// The run's end is durable: its waiters hear no more, and `status` and estimates learn of it.
    mutating func close(_ id: Int64, _ step: inout Step) {
        guard let flight = flights.removeValue(forKey: id) else { return }
        approvals[id] = nil
        let run = flight.run
        if lastEnded[run.action].map({ $0.id < id }) ?? true { lastEnded[run.action] = run }
        if run.phase == .success, flight.measured, let started = run.startedAt, let ended = run.endedAt {
            estimates.record(run.action, micros: ended.rawValue - started.rawValue)
        }
        step.emit(.close(run: id))
        drainIfDone(&step)
    }

    /// Starts the runs the table lets start now.
    mutating func admit(_ step: inout Step) {
        guard mode == .accepting else { return }
        for id in table.admit(at: step.now) { drive(id, .start, &step) }
        for (id, until) in table.takeRateHolds() { step.emit(.schedule(run: id, .rateLimit, after: max(until - step.now, .zero))) }
    }

    /// Applies an event to a run's machine and turns its effects into the step's.
    mutating func drive(_ id: Int64, _ event: RunMachine.Event, _ step: inout Step) {
        // In place: the flight is not copied out of the table and back for each event (issue 39).
        guard let index = flights.index(forKey: id) else { return }
        // A cancel or a replace of a run whose process runs is written down as the process is told
        // to stop (beside the kill, not before: a cancel kills at once, a full disk's writes waiting or
        // not), so that a restart ends the run as asked. Also where it meets the run stopping already
        // for a stop decided again (a timeout, a shutdown: review of 198f8eb7, M1), which still ends it.
        if case let .stop(stop) = event, stop.outlivesBatond, flights.values[index].machine.phase == .loading,
           !flights.values[index].launchWaits, flights.values[index].machine.stopping?.outlivesBatond != true {
            step.entries.append(.stopAsked(runID: id, stop))
        }
        let effects = flights.values[index].machine.handle(event)
        for effect in effects { perform(id, effect, &step) }
    }

    /// Performs one of a run's machine effects on its flight in place (issue 39: the flight was
    /// copied out of the table and written back for each, nine copies a run); what is told or
    /// decided elsewhere gets a copy of the run as recorded. Changed through the values' index:
    /// the keyed subscript's `_modify` moved the flight out, copied it back and allocated its
    /// frame, about 1,500 instructions each (issue 39).
    mutating func perform(_ id: Int64, _ effect: RunMachine.Effect, _ step: inout Step) {
        guard let index = flights.index(forKey: id) else { return }
        switch effect {
        case let .record(phase, detail):
            let transition = flights.values[index].record(phase, detail, at: step.now, random: &random)
            recorded(id, transition, &step)
        case let .launch(attempt):
            let launch = flights.values[index].launch(attempt)
            // `loading` is stamped when the start is decided; the process starts once that
            // `loading` is durable, and the timeout is armed then (`armTimeout`): the time a run's
            // creation or its start waited for the store (a lock held by another process, say) is
            // not run time (issue 21, item 14). An attempt a previous batond started is attached to at once.
            if launch.surviving != nil {
                armTimeout(launch, &step)
                step.emit(.launch(launch))
            } else {
                flights.values[index].launchWaits = true
                step.after.append(.launch(launch))
            }
        case .terminate:
            if flights.values[index].launchWaits { return neverStarted(id, "stopped before its process started", &step) }
            if flights[id]?.live != nil, let grace = flights[id]?.action.killGrace { step.emit(.stop(run: id, grace: grace)) }
        case let .backoff(attempt):
            step.emit(.schedule(run: id, .backoff(attempt), after: flights[id]?.nextBackoff ?? .zero))
        case .finish:
            table.ended(id)
            step.emit(.cancelTimers(run: id))
            admit(&step)
        }
    }

    /// What follows a transition recorded on run `id`'s flight: its write, what is told once it
    /// commits, and what its end decides (cooldown, slot, hooks, failures, the runs that need it).
    private mutating func recorded(_ id: Int64, _ transition: Transition, _ step: inout Step) {
        guard let run = recordedRun(id) else { return }
        let phase = transition.to
        step.entries.append(.transition(transition))
        step.after.append(.publish(RunUpdate(run: run, transition: transition)))
        if phase.isTerminal { step.after.append(.ended(id)) }
        // The cooldown starts when the success is decided, not when it is durable: a trigger
        // in between would find the key free. Its answer waits for its own record, which
        // commits after this end (in order), and an end is never refused.
        if phase == .success, cools(id) {
            remember(successes: [run])
            successUptimes[run.key] = step.uptime.map { (run.id, $0) }
        }
        if phase.isTerminal, let action = flightAction(id) {
            if run.slot != nil { slots.record(run) }
            fireHooks(run, action, output: outputWritten(for: id, step), &step)
            countFailures(run, action, &step)
        }
        needPhaseRecorded(run, &step)
    }
}

/// A flight's fields read from a non-mutating context: a mutating one that reads `flights[id]?.field`
/// copies the whole flight first (every field retained, then released), where these borrow it (issue 39).
extension ConductorState {
    func recordedRun(_ id: Int64) -> RunSnapshot? { flights[id]?.run }
    func recordedSnapshot(_ id: Int64) -> RunSnapshot? { flights[id]?.snapshot }
    func flightAction(_ id: Int64) -> Action? { flights[id]?.action }
    func cools(_ id: Int64) -> Bool { flights[id]?.action.cooldown != nil }
    /// The flight's live attempt and hand-over; nil when the run is not in flight.
    func attemptState(_ id: Int64) -> (live: Int?, handOver: HandOver?)? {
        guard flights.index(forKey: id) != nil else { return nil }
        return (flights[id]?.live, flights[id]?.handOver)
    }
}

extension ConductorState.Flight {
    /// Records a transition to `phase` on the run (its seq, the run as recorded, the backoff a
    /// retry waits); returns the transition to write.
    mutating func record(_ phase: Phase, _ detail: TransitionDetail, at now: Timestamp, random: inout SplitMix) -> Transition {
        var detail = detail
        // The locks it took to start, in the detail of its first `loading`.
        if phase == .loading, detail.attempt == 1, !action.locks.isEmpty { detail.locks = action.locks.map(\.name) }
        if phase == .retrying, let attempt = detail.attempt {
            nextBackoff = action.retry.delay(afterAttempt: attempt, unit: random.unit())
            detail.backoff = nextBackoff.microseconds
        }
        seq += 1
        let transition = Transition(runID: run.id, seq: seq, from: run.phase, to: phase, at: now, detail: detail)
        run = run.applying(transition)
        return transition
    }

    /// Starts attempt `attempt`: what it is launched with (an attempt a previous batond left, or
    /// output resumed, only at the first launch after recovery).
    mutating func launch(_ attempt: Int) -> Launch {
        live = attempt
        defer { (surviving, outputResumesAt) = (nil, nil) }
        return Launch(run: run.id, attempt: attempt, action: action, params: run.params, runner: runner, hook: hook, secrets: secrets,
                      surviving: surviving, outputResumesAt: outputResumesAt)
    }
}

extension ConductorState {
    /// Arms the run's deadline as its attempt is launched (`timeoutDelay`).
    func armTimeout(_ launch: Launch, _ step: inout Step) {
        guard let timeout = launch.action.timeout,
              let after = Self.timeoutDelay(timeout, startedAt: recordedRun(launch.run)?.startedAt, surviving: launch.surviving != nil,
                                            attempt: launch.attempt, at: step.now) else { return }
        step.emit(.schedule(run: launch.run, .timeout, after: after))
    }

    /// When a launch arms the run's deadline: at its first attempt, the whole `timeout`; at an
    /// attempt a previous batond started (adopted), what is left of it from the run's first
    /// start, as if no batond had stopped in between (at once, where it is over). Nil: armed already.
    static func timeoutDelay(_ timeout: Duration, startedAt: Timestamp?, surviving: Bool, attempt: Int, at now: Timestamp) -> Duration? {
        guard surviving else { return attempt == 1 ? timeout : nil }
        let ran = startedAt.map { now - $0 } ?? .zero
        return max(timeout - ran, .zero)
    }
}

extension FlightTable.Decision {
    /// Whether the trigger shares a run another trigger created.
    public var isShared: Bool {
        switch self {
        case .joined, .coalesced: true
        default: false
        }
    }

    /// The run the decision is about: the new run, or the one joined, coalesced into or rejected by.
    public var run: Int64 {
        switch self {
        case let .created(id), let .followUp(id, _), let .joined(id), let .coalesced(id), let .rejected(id, _), let .replaced(id, _),
             let .cooled(id), let .slotRan(id): id
        }
    }
}
