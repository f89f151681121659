#if canImport(Glibc)
import Glibc
#endif

/// Runs actions with single flight per key and records every phase change: the heart of Baton.
///
/// Decisions are made synchronously inside the actor (no `await` between a lookup and the
/// change it guards); only store commits and attempts are awaited. A trigger is answered after
/// its `queued` transition is committed, and an attempt starts after its `loading` transition is.
public actor Conductor {
    /// What a conductor is built with.
    public struct Options: Sendable {
        /// The most runs loading or retrying at once, across all keys.
        public var maxConcurrentRuns: Int
        /// Starts the attempts of actions that run a process.
        public var execRunner: any Runner
        /// A number in [0, 1) for backoff jitter.
        public var random: @Sendable () -> Double
        /// Names this conductor's history (batond: the database path). Processes of its runs carry it
        /// as `BATON_INSTANCE`, with `BATON_RUN_ID`, so that recovery finds them even when a crash
        /// came before their process group was recorded.
        public var instance: String?

        public init(
            maxConcurrentRuns: Int = Conductor.processorCount,
            execRunner: any Runner = ExecRunner(),
            random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
            instance: String? = nil
        ) {
            self.maxConcurrentRuns = maxConcurrentRuns
            self.execRunner = execRunner
            self.random = random
            self.instance = instance
        }
    }

    /// The number of online CPUs, the default concurrency limit.
    public static var processorCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    /// A run in flight and everything needed to drive it.
    struct LiveRun {
        var snapshot: RunSnapshot
        var action: Action
        var machine: RunMachine
        var seq: Int
        var attempt: (any Attempt)?
        var waiters: [AsyncStream<RunUpdate>.Continuation] = []
        var timeout: Task<Void, Never>?
        var timer: Task<Void, Never>?
        /// The body given with `run(_:_:body:)` to the trigger that created the run, if any.
        var runner: (any Runner)?
        /// Whether the run's `queued` transition is committed; later transitions wait for it.
        var durable = false
        var untilDurable: [CheckedContinuation<Void, Never>] = []
    }

    /// Accepting triggers, draining for shutdown, or stopped.
    private enum State {
        case accepting
        case draining(idle: [CheckedContinuation<Void, Never>])
        case stopped
    }

    var actions: [String: Action]
    private var closures: [String: ClosureRunner] = [:]
    let store: any RunStore
    let options: Options
    var table: FlightTable
    var runs: [Int64: LiveRun] = [:]
    var nextID: Int64 = 1
    private var state = State.accepting
    private var watchers: [Int: (action: String?, continuation: AsyncStream<RunUpdate>.Continuation)] = [:]
    private var nextWatcher = 0
    /// The last run of each action that ended, for `status`.
    var lastEnded: [String: RunSnapshot] = [:]
    /// Recent successful durations per action, for estimated progress.
    var estimates = DurationEstimates()

    public init(actions: [Action], store: any RunStore = MemoryStore(), options: Options = Options()) {
        self.actions = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.store = store
        self.options = options
        self.table = FlightTable(limit: options.maxConcurrentRuns)
    }

    // MARK: Triggers

    /// Triggers an action: creates a run, joins or is rejected, as the policy decides.
    /// Returns once the decision is durable in the history.
    public func trigger(_ request: TriggerRequest) async throws(BatonError) -> Ticket {
        try await trigger(request, runner: nil)
    }

    /// Triggers an action; a run it creates runs `runner` when given, else the action's own.
    func trigger(_ request: TriggerRequest, runner: (any Runner)?) async throws(BatonError) -> Ticket {
        guard case .accepting = state else { throw .shuttingDown }
        guard let action = actions[request.action] else { throw .unknownAction(request.action) }
        let policy = try action.resolvePolicy(request.policy)
        let params = try action.resolveParams(request.params)
        let key = action.key(for: params)
        let now = Timestamp.now
        let decision = table.trigger(key: key, policy: policy, candidate: nextID)
        switch decision {
        case let .created(id), let .followUp(id, _), let .replaced(id, _):
            nextID += 1
            return try await create(id, action: action, key: key, policy: policy, params: params, request: request,
                                    at: now, decision: decision, runner: runner)
        case let .joined(id), let .coalesced(id):
            let decisionName = if case .joined = decision { "joined" } else { "coalesced" }
            let updates = request.wait ? addWaiter(to: id) : nil
            let snapshot = runs[id]?.snapshot
            let record = TriggerRecord(runID: id, action: action.name, key: key, decision: decisionName,
                                       policy: policy, peer: request.peer, at: now, params: params)
            if case let .failure(error) = await commit([.trigger(record)]) { throw error }
            guard let snapshot else { throw .internalError("run \(id) vanished while joining") }
            return Ticket(decision: decision, run: runs[id]?.snapshot ?? snapshot, updates: updates)
        case let .rejected(id):
            let holder = runs[id]?.snapshot
            let record = TriggerRecord(runID: id, action: action.name, key: key, decision: "rejected",
                                       policy: policy, peer: request.peer, at: now, params: params)
            if case let .failure(error) = await commit([.trigger(record)]) { throw error }
            throw .busy(run: id, action: action.name, phase: holder?.phase ?? .queued,
                        since: holder?.startedAt ?? holder?.queuedAt ?? now)
        }
    }

    private func create(
        _ id: Int64, action: Action, key: String, policy: Policy, params: [String: String],
        request: TriggerRequest, at now: Timestamp, decision: FlightTable.Decision, runner: (any Runner)?
    ) async throws(BatonError) -> Ticket {
        var detail = TransitionDetail()
        if case let .replaced(_, stopping) = decision { detail.replaces = stopping; detail.reason = "replace" }
        if case let .followUp(_, after) = decision { detail.reason = "follow-up of run \(after)" }
        var snapshot = RunSnapshot(id: id, action: action.name, key: key, phase: .queued, policy: policy,
                                   params: params, trigger: request.peer, queuedAt: now)
        snapshot.estimate = estimates.median(action.name)
        let transition = Transition(runID: id, seq: 1, from: nil, to: .queued, at: now, detail: detail)
        runs[id] = LiveRun(snapshot: snapshot, action: action, machine: RunMachine(retries: action.retry.attempts), seq: 1,
                           runner: runner)
        let updates = request.wait ? addWaiter(to: id) : nil
        // Enqueued before anything else can be written about this run; awaited below.
        let created = enqueue([.created(snapshot, transition)])
        if case let .replaced(_, stopping) = decision {
            for old in stopping { await apply(old, .stop(.replaced(by: id))) }
        }
        if case let .failure(error) = await created.value {
            abandon(id)
            throw error
        }
        if runs[id] != nil {
            runs[id]!.durable = true
            for waiter in runs[id]!.untilDurable { waiter.resume() }
            runs[id]!.untilDurable = []
        }
        publish(id, transition)
        table.markDurable(id)
        startAdmitted()
        return Ticket(decision: decision, run: runs[id]?.snapshot ?? snapshot, updates: updates)
    }

    /// Forgets a run whose creation could not be recorded; its waiters see their stream end.
    private func abandon(_ id: Int64) {
        guard let live = runs.removeValue(forKey: id) else { return }
        table.ended(id)
        for waiter in live.waiters { waiter.finish() }
        for waiter in live.untilDurable { waiter.resume() }
        startAdmitted()
    }

    // MARK: Cancel

    /// Cancels one run in flight: drops it if queued, stops its processes if loading.
    @discardableResult
    public func cancel(run id: Int64, by peer: Peer?) async throws(BatonError) -> RunSnapshot {
        guard let live = runs[id] else { throw .unknownRun(id) }
        await apply(id, .stop(.cancelled(by: peer?.uid)))
        if let current = runs[id]?.snapshot { return current }
        if let ended = lastEnded[live.action.name], ended.id == id { return ended }
        return live.snapshot
    }

    /// Cancels every run in flight of an action, or of one key of it; returns the runs cancelled.
    public func cancel(action name: String, key: String? = nil, by peer: Peer?) async throws(BatonError) -> [Int64] {
        guard actions[name] != nil || runs.values.contains(where: { $0.action.name == name }) else {
            throw .unknownAction(name)
        }
        let ids = runs.values.filter { $0.snapshot.action == name && (key == nil || $0.snapshot.key == key) }
            .map(\.snapshot.id).sorted()
        for id in ids { await apply(id, .stop(.cancelled(by: peer?.uid))) }
        return ids
    }

    // MARK: Queries

    /// The runs in flight, oldest first.
    public func inFlight() -> [RunSnapshot] {
        runs.values.map(\.snapshot).sorted { $0.id < $1.id }
    }

    /// The snapshot of a run in flight, with its latest progress; nil once it has ended.
    public func snapshot(of id: Int64) -> RunSnapshot? {
        runs[id]?.snapshot
    }

    /// The action of that name, configured or registered.
    public func action(named name: String) -> Action? { actions[name] }

    /// The configured actions, by name.
    public func configuredActions() -> [Action] {
        actions.values.sorted { $0.name < $1.name }
    }

    /// The last ended run of each action seen since start (seeded from the history by `remember`).
    public func lastOutcomes() -> [String: RunSnapshot] { lastEnded }

    /// Seeds the last outcome of actions from the history.
    public func remember(_ runs: [RunSnapshot]) {
        for run in runs where lastEnded[run.action].map({ $0.id < run.id }) ?? true { lastEnded[run.action] = run }
    }

    /// Seeds the recent successful durations (microseconds, oldest first) of actions from the history.
    public func remember(durations: [String: [Int64]]) {
        for (action, list) in durations {
            for micros in list { estimates.record(action, micros: micros) }
        }
    }

    /// The median of the recent successful durations of an action, when it has any.
    public func estimate(of action: String) -> Duration? {
        estimates.median(action).map { .microseconds($0) }
    }

    /// Follows every committed transition (of one action, or all), until the stream is dropped.
    public func watch(action: String? = nil) -> AsyncStream<RunUpdate> {
        let (stream, continuation) = AsyncStream<RunUpdate>.makeStream()
        let id = nextWatcher
        nextWatcher += 1
        watchers[id] = (action, continuation)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeWatcher(id) }
        }
        return stream
    }

    /// Waits for a run in flight; nil when it is not in flight.
    public func attach(_ id: Int64) -> AsyncStream<RunUpdate>? {
        guard runs[id] != nil else { return nil }
        return addWaiter(to: id)
    }

    private func removeWatcher(_ id: Int) { watchers[id] = nil }

    // MARK: In-process actions

    /// Registers an in-process action: `body` runs with the action's single flight and history.
    public func register(_ action: Action, _ body: @escaping ClosureRunner.Body) {
        actions[action.name] = action
        closures[action.name] = ClosureRunner(body)
    }

    /// Replaces the configured actions (reload). Runs in flight keep the definition they started with;
    /// in-process actions stay registered.
    public func replaceActions(_ newActions: [Action]) {
        var next = Dictionary(newActions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        for (name, action) in actions where action.exec.isEmpty && next[name] == nil { next[name] = action }
        actions = next
    }

    // MARK: Driving runs

    /// Applies an event to a run's machine and performs the effects in order.
    func apply(_ id: Int64, _ event: RunMachine.Event) async {
        guard var live = runs[id] else { return }
        let effects = live.machine.handle(event)
        runs[id] = live
        for effect in effects {
            switch effect {
            case let .record(phase, detail):
                await record(id, phase, detail)
            case let .launch(attempt):
                launch(id, attempt: attempt)
            case .terminate:
                terminate(id)
            case let .backoff(attempt):
                backoff(id, after: attempt)
            case .finish:
                finish(id)
            }
        }
    }

    private func record(_ id: Int64, _ phase: Phase, _ detail: TransitionDetail) async {
        if let live = runs[id], !live.durable {
            await withCheckedContinuation { runs[id]!.untilDurable.append($0) }
        }
        guard var live = runs[id] else { return }
        live.seq += 1
        let transition = Transition(runID: id, seq: live.seq, from: live.snapshot.phase, to: phase, at: .now, detail: detail)
        live.snapshot = live.snapshot.applying(transition)
        runs[id] = live
        _ = await commit([.transition(transition)])
        publish(id, transition)
    }

    private func launch(_ id: Int64, attempt: Int) {
        guard let live = runs[id], live.machine.state == .loading(attempt: attempt) else { return }
        if live.machine.stopping != nil {
            Task { await self.apply(id, .exited(.notStarted)) }
            return
        }
        if attempt == 1 { startTimeout(id) }
        let runner: any Runner = live.runner ?? closures[live.action.name] ?? options.execRunner
        let job = Job(runID: id, action: live.action, attempt: attempt, params: live.snapshot.params,
                      instance: options.instance) { [weak self] progress in
            Task { await self?.progressed(id, progress) }
        }
        Task.detached { [weak self] in
            let handle = runner.start(job)
            await self?.launched(id, attempt: attempt, handle)
            let outcome = await handle.wait()
            await self?.attemptEnded(id, attempt: attempt, outcome)
        }
    }

    /// The run's deadline counts from its first attempt and covers retries and backoffs.
    private func startTimeout(_ id: Int64) {
        guard let limit = runs[id]?.action.timeout, runs[id]?.timeout == nil else { return }
        runs[id]!.timeout = Task { [weak self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            await self?.apply(id, .stop(.timeout(after: limit)))
        }
    }

    private func launched(_ id: Int64, attempt: Int, _ handle: any Attempt) {
        guard runs[id] != nil else { return }
        runs[id]!.attempt = handle
        if let group = handle.processGroup {
            store.enqueue([.processGroup(runID: id, pgid: group.pgid, identity: group.identity)]) { _ in }
        }
        if runs[id]!.machine.stopping != nil { terminate(id) }
    }

    private func attemptEnded(_ id: Int64, attempt: Int, _ outcome: AttemptOutcome) async {
        guard runs[id] != nil else { return }
        runs[id]!.attempt = nil
        runs[id]!.timer?.cancel()
        if !outcome.output.isEmpty || outcome.result.started {
            store.enqueue([.output(runID: id, tail: outcome.output, truncated: outcome.truncated)]) { _ in }
        }
        await apply(id, .exited(outcome.result))
    }

    private func terminate(_ id: Int64) {
        guard let live = runs[id], let attempt = live.attempt else { return }
        attempt.signal(SIGTERM)
        let grace = live.action.killGrace
        runs[id]!.timer?.cancel()
        runs[id]!.timer = Task {
            guard (try? await Task.sleep(for: grace)) != nil else { return }
            attempt.signal(SIGKILL)
        }
    }

    private func backoff(_ id: Int64, after attempt: Int) {
        guard let live = runs[id], live.machine.state == .retrying(attempt: attempt) else { return }
        let delay = live.action.retry.delay(afterAttempt: attempt, unit: options.random())
        runs[id]!.timer?.cancel()
        runs[id]!.timer = Task { [weak self] in
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            await self?.apply(id, .backoffElapsed)
        }
    }

    private func finish(_ id: Int64) {
        guard let live = runs.removeValue(forKey: id) else { return }
        live.timeout?.cancel()
        live.timer?.cancel()
        table.ended(id)
        for waiter in live.waiters { waiter.finish() }
        if lastEnded[live.action.name].map({ $0.id < id }) ?? true { lastEnded[live.action.name] = live.snapshot }
        if live.snapshot.phase == .success, let started = live.snapshot.startedAt, let ended = live.snapshot.endedAt {
            estimates.record(live.action.name, micros: ended.rawValue - started.rawValue)
        }
        startAdmitted()
        if case let .draining(idle) = state, !hasActiveRuns {
            state = .draining(idle: [])
            for waiter in idle { waiter.resume() }
        }
    }

    private func progressed(_ id: Int64, _ progress: Progress) {
        guard runs[id] != nil else { return }
        runs[id]!.snapshot.progress = progress
        let update = RunUpdate(run: runs[id]!.snapshot, transition: nil)
        for waiter in runs[id]!.waiters { waiter.yield(update) }
    }

    func startAdmitted() {
        guard case .accepting = state else { return }
        for id in table.admit() {
            Task { await self.apply(id, .start) }
        }
    }

    // MARK: Publishing

    private func addWaiter(to id: Int64) -> AsyncStream<RunUpdate> {
        let (stream, continuation) = AsyncStream<RunUpdate>.makeStream()
        if let live = runs[id] {
            continuation.yield(RunUpdate(run: live.snapshot, transition: nil))
            runs[id]!.waiters.append(continuation)
        } else {
            continuation.finish()
        }
        return stream
    }

    func publish(_ id: Int64, _ transition: Transition) {
        guard let live = runs[id] else { return }
        let update = RunUpdate(run: live.snapshot, transition: transition)
        for waiter in live.waiters { waiter.yield(update) }
        for watcher in watchers.values where watcher.action == nil || watcher.action == live.action.name {
            watcher.continuation.yield(update)
        }
    }

    /// Enqueues entries now (so that they precede anything enqueued later) and returns their
    /// commit, to await when the caller is ready.
    private func enqueue(_ entries: [JournalEntry]) -> PendingCommit {
        let pending = PendingCommit()
        store.enqueue(entries) { pending.fulfil($0) }
        return pending
    }

    func commit(_ entries: [JournalEntry]) async -> Result<Void, BatonError> {
        await enqueue(entries).value
    }

    // MARK: Shutdown

    /// Stops taking triggers and lets runs in flight end within `grace`; then cancels the rest
    /// with reason `shutdown`. Runs still queued stay queued in the history for the next start.
    public func shutdown(grace: Duration) async {
        guard case .accepting = state else { return }
        state = .draining(idle: [])
        let deadline = ContinuousClock.now + grace
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
            await self?.stopRemaining()
        }
        await waitUntilIdle()
        timer.cancel()
        for watcher in watchers.values { watcher.continuation.finish() }
        for live in runs.values { for waiter in live.waiters { waiter.finish() } }
        state = .stopped
    }

    /// Ends the shutdown grace now: runs still loading are cancelled with reason `shutdown`.
    public func stopRemaining() async {
        let ids = runs.values.filter { $0.machine.phase != .queued }.map(\.snapshot.id).sorted()
        for id in ids { await apply(id, .stop(.shutdown)) }
    }

    /// Whether any run is loading or retrying (queued runs wait for the next start at shutdown).
    private var hasActiveRuns: Bool { runs.values.contains { $0.machine.phase != .queued } }

    private func waitUntilIdle() async {
        guard hasActiveRuns else { return }
        await withCheckedContinuation { continuation in
            if case let .draining(idle) = state { state = .draining(idle: idle + [continuation]) }
            else { continuation.resume() }
        }
    }
}

/// A store commit that was enqueued and may not have completed yet: awaited once, by the task
/// that enqueued it (no task or stream of its own on the trigger path).
final class PendingCommit: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Result<Void, BatonError>, Never>?)
        case done(Result<Void, BatonError>)
    }

    private let state = Locked(State.waiting(nil))

    /// Called by the store, from its writer thread, once.
    func fulfil(_ result: Result<Void, BatonError>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Void, BatonError>, Never>? in
            defer { state = .done(result) }
            if case let .waiting(continuation) = state { return continuation }
            return nil
        }
        waiter?.resume(returning: result)
    }

    /// The commit's result, once it is known.
    var value: Result<Void, BatonError> {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Result<Void, BatonError>? in
                    if case let .done(result) = state { return result }
                    state = .waiting(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
