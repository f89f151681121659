import Synchronization

extension Conductor {
    // MARK: Triggers

    /// Triggers an action by name, resolving it against the actions this conductor knows: creates
    /// a run, joins or is rejected, as the policy decides. Returns once the decision is durable.
    public func trigger(_ request: TriggerRequest) async throws(BatonError) -> Ticket {
        try await trigger(resolve(request, runner: nil), follow: request.wait)
    }

    /// Triggers an action already resolved (by the service, against one config generation).
    /// With `follow`, the ticket carries the run's updates until it ends.
    public func trigger(_ trigger: Trigger, follow: Bool) async throws(BatonError) -> Ticket {
        let (updates, follower) = follow ? Self.stream() : (nil, nil)
        let result = await withCheckedContinuation { continuation in
            self.trigger(trigger, follower: follower) { continuation.resume(returning: $0) }
        }
        let (decision, run) = try result.get()
        return Ticket(decision: decision, run: run, updates: updates)
    }

    /// Triggers without waiting: `answered` is called once the decision is durable (on the
    /// thread that learns it), then `follower`, if given, with the run's updates until its end.
    public func trigger(_ trigger: Trigger, follower: Follower?,
                        answered: @escaping @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void) {
        if let reason = store.unavailableReason { return answered(.failure(.storeUnavailable(reason))) }
        ask({ .trigger($0, trigger) }, .trigger(answered, follower: follower))
    }

    /// A stream of a run's updates, and the follower that feeds it.
    static func stream() -> (AsyncStream<RunUpdate>, Follower) {
        let (stream, continuation) = AsyncStream<RunUpdate>.makeStream()
        return (stream, { update in
            if let update { continuation.yield(update) } else { continuation.finish() }
        })
    }

    /// The trigger for a request: its action looked up, its policy and params checked, its key made.
    func resolve(_ request: TriggerRequest, runner: RunnerBox?) throws(BatonError) -> Trigger {
        guard let action = shared.withLock({ $0.actions[request.action] }) else { throw .unknownAction(request.action) }
        let policy = try action.resolvePolicy(request.policy)
        let sealed = try action.seal(try action.resolveParams(request.params), with: options.sealer)
        return Trigger(action: action, key: sealed.key, policy: policy, params: sealed.params, peer: request.peer,
                       runner: runner, force: try action.checkForce(request.force), secrets: sealed.secrets)
    }

    // MARK: Cancel

    /// Cancels one run in flight: drops it if queued or waiting to retry, stops its processes if
    /// loading. Returns the run as it is now.
    @discardableResult
    public func cancel(run id: Int64, by peer: Peer?) async throws(BatonError) -> RunSnapshot {
        let runs = try await cancel(.run(id), by: peer)
        guard let run = runs.first else { throw .unknownRun(id) }
        return run
    }

    /// Cancels every run in flight of an action, or of one key of it; returns those runs as they are now.
    @discardableResult
    public func cancel(action name: String, key: String? = nil, by peer: Peer?) async throws(BatonError) -> [RunSnapshot] {
        try await cancel(.action(name, key: key), by: peer)
    }

    func cancel(_ target: ConductorState.CancelTarget, by peer: Peer?) async throws(BatonError) -> [RunSnapshot] {
        try await withCheckedContinuation { continuation in
            cancel(target, by: peer) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Cancels without waiting: `answered` gets the runs stopped, once their ends are durable
    /// (a loading run's end follows when its processes are gone).
    public func cancel(_ target: ConductorState.CancelTarget, by peer: Peer?,
                       answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void) {
        ask({ .cancel($0, target, by: peer?.uid, principal: peer?.principal) }, .cancel(answered))
    }

    // MARK: Queries
    // Other threads read the state as it is, in place under its lock.

    /// Reads the state in place, under its lock (a copy kept would cost the loop a copy of
    /// every run it holds at its next change); `body` borrows it, so no copy is made for the
    /// call either (issue 39: a by-value parameter copied the whole state for each caller).
    func reading<T>(_ body: (borrowing ConductorState) -> T) -> T { shared.withLock { body($0.state) } }

    /// The runs in flight, oldest first.
    public func inFlight() -> [RunSnapshot] { reading { $0.inFlight } }

    /// A run in flight, with its latest progress; nil once its end is durable.
    public func snapshot(of id: Int64) -> RunSnapshot? { shared.withLock { $0.state.snapshot(of: id) } }

    /// Follows a run in flight: its updates until it ends; nil when it is not in flight.
    public func attach(_ id: Int64) async -> AsyncStream<RunUpdate>? {
        let (updates, follower) = Self.stream()
        let run = await withCheckedContinuation { continuation in
            attach(id, follower: follower) { continuation.resume(returning: $0) }
        }
        return run == nil ? nil : updates
    }

    /// Follows a run in flight without waiting: `answered` gets it (nil when it is not in flight),
    /// then `follower` its updates until its end.
    public func attach(_ id: Int64, follower: @escaping Follower, answered: @escaping @Sendable (RunSnapshot?) -> Void) {
        ask({ .attach($0, run: id) }, .attach(answered, follower: follower))
    }

    /// The action of that name, configured or registered.
    public func action(named name: String) -> Action? { shared.withLock { $0.actions[name] } }

    /// The configured and registered actions, by name.
    public func configuredActions() -> [Action] {
        shared.withLock { $0.actions }.values.sorted { $0.name < $1.name }
    }

    /// The last ended run of each action (seeded from the history by `remember`).
    public func lastOutcomes() -> [String: RunSnapshot] { reading { $0.lastEnded } }

    /// The last success of each key whose action has a cooldown, by key: what a trigger inside
    /// the window is answered with.
    public func lastSuccesses() -> [String: RunSnapshot] { reading { $0.successes } }

    /// Each key's last success as the cooldown measures it (with its end on the boot's clock
    /// where this process saw it), by key.
    public func lastSuccessClocks() -> [String: KeyDecision.LastSuccess] {
        reading { state in
            var clocks: [String: KeyDecision.LastSuccess] = [:]
            for key in state.successes.keys { clocks[key] = state.lastSuccess(of: key) }
            return clocks
        }
    }

    /// Seeds the last outcome of actions and their recent successful durations (microseconds,
    /// oldest first) from the history.
    /// Like every `remember`, done on the loop: posted when called elsewhere, ahead of whatever
    /// the caller posts next (a recovery, a trigger); its queries see it after `ping()`.
    public func remember(_ runs: [RunSnapshot], durations: [String: [Int64]] = [:]) {
        changeState { $0.remember(lastEnded: runs, durations: durations) }
    }

    /// Seeds the last success of each key whose action has a cooldown from the history, so that
    /// a restart keeps every cooldown window.
    public func remember(successes runs: [RunSnapshot]) {
        changeState { $0.remember(successes: runs) }
    }

    /// Seeds the last outcome of each key whose action has a `change` hook from the history, so
    /// that `change` compares against the run before a restart.
    public func remember(outcomes runs: [RunSnapshot]) {
        changeState { $0.remember(outcomes: runs) }
    }

    /// Seeds the starts of rate-limited actions from the history (at start, before recovery).
    public func remember(starts runs: [RunSnapshot], actions: [String: Action]) {
        changeState { $0.remember(starts: runs, actions: actions) }
    }

    /// Seeds an action's failures in a row (`pauseAfterFailures`) from its latest successes and
    /// failures (newest first) after its last pause or resume (`since`).
    public func remember(failuresOf action: Action, runs: [RunSnapshot], since: Timestamp?) {
        changeState { $0.remember(failuresOf: action, runs: runs, since: since) }
    }

    /// Seeds the runs of scheduled slots from the history, so that a restart does not run a slot again.
    public func remember(slots runs: [RunSnapshot]) {
        changeState { $0.remember(slots: runs) }
    }

    /// The median of the recent successful durations of an action, when it has any.
    public func estimate(of action: String) -> Duration? {
        reading { $0.estimates.median(action) }.map { .microseconds($0) }
    }

    /// Changes the state on the loop (now, when the caller is the loop); what
    /// the caller does next on the loop (a trigger, a recovery) comes after it, whichever thread
    /// it is posted from after this call.
    func changeState(_ change: @escaping @Sendable (inout ConductorState) -> Void) {
        reactor.onLoop { [self] in
            shared.withLock { change(&$0.state) }
        }
    }

    /// Answers once the event loop has turned: the conductor is alive and not stuck (the watchdog's
    /// check), and what was posted to it before (a `remember`) is done.
    public func ping() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reactor.post { continuation.resume() }
        }
    }

    /// Follows every committed transition (of one action, or all), until the stream is dropped.
    public func watch(action: String? = nil) -> AsyncStream<RunUpdate> {
        let (stream, continuation) = AsyncStream<RunUpdate>.makeStream()
        let id = observe(action: action) { update in
            if let update { continuation.yield(update) } else { continuation.finish() }
        }
        continuation.onTermination = { [weak self] _ in self?.stopObserving(id) }
        return stream
    }

    /// Calls `observer` with every committed transition (of one action, or all), on the thread
    /// that learns of the commit (it must not block), and with nil when batond stops.
    @discardableResult
    public func observe(action: String? = nil, progress: Bool = false, _ observer: @escaping Follower) -> Int {
        let id = ids.wrappingAdd(1, ordering: .relaxed).oldValue
        reactor.onLoop { [self] in
            let ended = core.access { core -> Bool in
                if !core.followersEnded { core.watchers[id] = Watcher(action: action, progress: progress, follower: observer) }
                return core.followersEnded
            }
            if ended { observer(nil) }
        }
        return id
    }

    /// Stops calling an observer.
    public func stopObserving(_ id: Int) {
        reactor.onLoop { [self] in _ = core.access { $0.watchers.removeValue(forKey: id) } }
    }

    // MARK: Actions

    /// Registers an in-process action: `body` runs with the action's single flight and history.
    public func register(_ action: Action, _ body: @escaping ClosureRunner.Body) {
        shared.withLock { registry in
            registry.actions[action.name] = action
            registry.closures[action.name] = RunnerBox(ClosureRunner(body))
            registry.loaded += 1
        }
    }

    /// Replaces the configured actions (reload). Runs in flight keep the definition they started with;
    /// in-process actions stay registered. An action the reload removes, or whose `exec` it
    /// changes, has its duration estimate forgotten: the samples measured another command, and an
    /// action of that name added back later starts without them; its runs in flight, which run the
    /// old command, are not measured when they end (`ConductorState.forget(actions:)`).
    public func replaceActions(_ actions: [Action]) {
        let next = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        let (redefined, configured) = shared.withLock { registry -> ([String], [String: Action]) in
            var next = next
            for (name, action) in registry.actions where registry.closures[name] != nil && next[name] == nil { next[name] = action }
            let redefined = registry.actions.compactMap { name, old in next[name]?.exec == old.exec ? nil : name }
            if options.keepsEarlierActions { registry.keepEarlier(replacedBy: next) }
            registry.actions = next
            registry.loaded += 1
            return (redefined, next)
        }
        if !redefined.isEmpty { changeState { $0.forget(actions: redefined) } }
        // Waits for an approval the reload gives up end (`ConductorState.waiveApprovals`).
        send(.reloaded(configured))
    }

    // MARK: Shutdown

    /// Stops taking triggers and lets runs in flight end within `grace`; then cancels the rest
    /// with reason `shutdown`, and waits `writesWithin` more for their ends to be durable before
    /// it stops waiting for writes (as `stopRemaining` does): a store that cannot write (a locked
    /// database, a full disk) never keeps one stop signal from ending batond. Runs still queued
    /// stay queued in the history for the next start. `settle`, once the runs are drained and
    /// before the watchers and followers are ended: a stop's servers end their connections there
    /// (`{"restarting":true}`), so that a client following a run handed over waits for it on the next batond.
    public func shutdown(grace: Duration, writesWithin: Duration = .seconds(10), settle: (@Sendable () async -> Void)? = nil) async {
        // The grace is armed only once `.shutdown` is in: a grace of 0 that fired first would be
        // ignored (nothing is draining yet), and the runs in flight would never be stopped.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reactor.onLoop { [self] in
                let done = core.access { core -> Bool in
                    if core.isDrained { return true }
                    core.drained.append(continuation)
                    return false
                }
                if done { return continuation.resume() }
                send(.shutdown)
                // Armed once the shutdown is handled (its effects are performed by now).
                let armed = reactor.after(grace) { [weak self] in
                    guard let self else { return }
                    send(.graceElapsed)
                    let giveUp = reactor.after(writesWithin) { [weak self] in self?.send(.abandonWrites) }
                    core.access { $0.shutdownTimer = giveUp }
                }
                core.access { $0.shutdownTimer = armed }
            }
        }
        await settle?()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reactor.onLoop { [self] in
                let (timer, all) = core.access { core in
                    defer { (core.shutdownTimer, core.watchers) = (nil, [:]) }
                    return (core.shutdownTimer, Array(core.watchers.values))
                }
                if let timer { reactor.cancel(timer) }
                endFollowers()
                for watcher in all { watcher.follower(nil) }
                continuation.resume()
            }
        }
    }

    /// Ends the shutdown grace now: runs still loading are cancelled with reason `shutdown`, and
    /// the shutdown returns once their processes are gone, without waiting for writes the store
    /// cannot make (a full disk); the store's close says what was not written. Safe to call
    /// before `shutdown` has begun (a second signal that arrives first): the shutdown event goes
    /// in first, so that the grace's end is not ignored.
    public func stopRemaining() {
        send(.shutdown)
        send(.abandonWrites)
    }
}

extension Conductor {
    // MARK: The fleet

    /// Runs a run whose start the fleet made durable; `answered` gets it as it is once its
    /// attempt is launched, then `follower` (if given) its updates until its end.
    public func adopt(_ adopted: AdoptedRun, follower: Follower?, answered: @escaping @Sendable (RunSnapshot?) -> Void) {
        ask({ .adopt($0, adopted) }, .attach(answered, follower: follower ?? { _ in }))
    }

    /// Stops a run as another host asked; nothing if it is not running here.
    public func stop(run id: Int64, _ stop: RunMachine.Stop) {
        send(.stopRun(id, stop))
    }

    /// How many runs are loading or retrying here (the fleet starts no more than the limit), as
    /// the state is now (an end being handed to the store is counted out already).
    public var runningCount: Int {
        reading { $0.runningCount }
    }

    /// Tells this conductor's watchers about a transition another host committed.
    public func publishFromFleet(_ update: RunUpdate) {
        reactor.onLoop { [self] in publishToWatchers(update) }
    }
}

extension Conductor {
    /// Why the store cannot take writes now (triggers are refused meanwhile), or nil.
    public var storeUnavailableReason: String? { store.unavailableReason }

    /// The tag every attempt's processes carry (`BATON_INSTANCE`), when this conductor has one.
    public var instance: String? { options.instance }
}
