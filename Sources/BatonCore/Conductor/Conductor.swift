#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Runs actions with single flight per key and records every phase change: the heart of Baton.
///
/// All decisions are `ConductorState`'s; this class only feeds it events and performs the
/// effects it returns. It lives on the event loop (the reactor it is given): events from other
/// threads (request tasks, the store's writer) are posted there; there each event is handled —
/// the state changed under its lock (a pure step) — and all of its effects performed, with no lock
/// held, before the next event. Replies and followers are called on the loop, whose attempts,
/// replies and watchers no other thread touches (`LoopOwned`). Other threads read the state in
/// place under its lock (`Shared`).
/// Nothing is awaited inside the conductor: callers wait for their answer only.
public final class Conductor: Sendable {
    /// The number of online CPUs, the default concurrency limit.
    public static var processorCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    typealias Token = ConductorState.Token

    /// Told each update of a run it follows, in order, then nil once the run's end is durable (or
    /// batond stops first). Called on the event loop: it must not block.
    public typealias Follower = @Sendable (RunUpdate?) -> Void

    /// A caller waiting for its answer; answers are called on the event loop.
    enum Reply: Sendable {
        case trigger(@Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void, follower: Follower?)
        case cancel(@Sendable (Result<[RunSnapshot], BatonError>) -> Void)
        case attach(@Sendable (RunSnapshot?) -> Void, follower: Follower)
        case recover(@Sendable (RecoverySummary) -> Void)
        case pause(@Sendable (Result<ActionPause?, BatonError>) -> Void)
        case approval(@Sendable (Result<RunSnapshot, BatonError>) -> Void)
    }

    /// Everything the loop changes, and only the loop.
    struct Core {
        var attempts: IDMap<Int64, any Attempt> = [:]
        var timers: IDMap<Int64, [ConductorState.Timer: Reactor.TimerID]> = [:]
        var replies: IDMap<Token, Reply> = [:]
        var nextToken: Token = 1
        var waiters: IDMap<Int64, [Follower]> = [:]
        /// The output of each run in flight that wrote some, on its way to the history.
        var outputs: IDMap<Int64, OutputLimiter> = [:]
        /// Each run's output cut into lines for the line sink (only when there is one).
        var lines: IDMap<Int64, OutputLines> = [:]
        /// The leader's pid of each attempt in flight that started a process (for the line sink).
        var leaders: IDMap<Int64, Int32> = [:]
        /// Who follows the output of a run in flight, by registration.
        var outputFollowers: [Int: (run: Int64, follower: OutputFollower)] = [:]
        var drained: [CheckedContinuation<Void, Never>] = []
        var isDrained = false
        /// The stop ended the followers (after its `settle`): a new one is told at once that nothing
        /// more comes. Not `isDrained`: between the drain and the settle a follower still registers,
        /// and the settle ends its connection with `{"restarting":true}` (docs/protocol.md).
        var followersEnded = false
        /// The shutdown's grace, then its wait for writes.
        var shutdownTimer: Reactor.TimerID?
        /// Watchers of every committed transition (of one action, or all).
        var watchers: [Int: Watcher] = [:]
        /// The masking of secret values in the output of each attempt in flight that has some.
        var redactions: IDMap<Int64, Redaction> = [:]
        /// The store items of this turn of the loop, handed over together at its end (`Conductor+Writes`).
        var unsent: [UnsentWrite] = []
    }

    /// What other threads read in place, under one lock: the state (only the loop changes it,
    /// deciding each event under the lock, a pure step, and performing its effects after), and
    /// the actions (which any thread may register or replace; the loop reads them to start an attempt).
    struct Shared {
        var state: ConductorState
        /// Configured and registered actions, by name (the service resolves triggers itself).
        var actions: [String: Action]
        var closures: [String: RunnerBox] = [:]
        /// Actions reloads replaced or removed, by name, kept while `Options.keepsEarlierActions` (`Conductor+Earlier`).
        var earlier: [String: [Action]] = [:]
        /// How many times what the conductor has loaded changed: a reload, an in-process action
        /// registered, or earlier actions forgotten (`loadedGeneration`: what was decided from the
        /// actions before is stale after).
        var loaded = 0
    }

    let store: any RunStore
    let options: Options
    /// Where every line of every run's output goes besides the history, if anywhere.
    public var lineSink: (any OutputLineSink)? { options.lineSink }
    /// The loop this conductor lives on.
    public let reactor: Reactor
    private let inbox: LoopOwned<Inbox>
    let core: LoopOwned<Core>
    /// The one lock: around what the loop publishes for other threads, and the actions.
    let shared: Locked<Shared>
    /// Ids of watchers and output followers, handed out on any thread.
    let ids = Atomic<Int>(0)

    /// Who follows the transitions (and, when it asked, the progress) of one action or all.
    struct Watcher {
        var action: String?
        var progress: Bool
        var follower: Follower
    }

    /// A conductor on `reactor`'s loop (by default a reactor of its own). An `ExecRunner` in the
    /// options that names no reactor watches its attempts on this one.
    public init(actions: [Action], store: any RunStore = MemoryStore(), options: Options = Options(), reactor: Reactor = Reactor()) {
        self.store = store
        var options = options
        if var runner = options.execRunner as? ExecRunner, runner.reactor == nil {
            runner.reactor = reactor
            options.execRunner = runner
        }
        self.options = options
        self.reactor = reactor
        let registry = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        var state = ConductorState(maxConcurrentRuns: options.maxConcurrentRuns, seed: options.seed)
        state.storeDecidesHooks = options.storeDecidesHooks
        state.storeCountsFailures = options.storeCountsFailures
        state.handsOver = options.handsOver
        state.leavesRetrying = options.leavesRetrying
        core = LoopOwned(Core(), on: reactor)
        inbox = LoopOwned(Inbox(), on: reactor)
        shared = Locked(Shared(state: state, actions: registry))
    }

    // MARK: The inbox


    /// Hands an event to the conductor: handled now when the caller is the loop (after the events
    /// it is already handling), else posted to the loop.
    func send(_ event: ConductorState.Event) {
        guard reactor.isCurrent else { return reactor.post { [self] in send(event) } }
        guard inbox.access({ $0.push(event) }) else { return }
        var current: ConductorState.Event? = event
        while let next = current {
            defer { current = inbox.access { $0.pop() } }
            // Decided under the state's lock (a pure step, no effect), performed after it: whoever
            // is told of a change (an answer, an update) finds it in the queries too.
            let (now, uptime) = (Timestamp.now, Timestamp.uptime)
            let effects = shared.withLock { $0.state.handle(next, at: now, uptime: uptime) }
            for effect in effects { perform(effect) }
        }
    }

    /// Registers a reply and sends the event that asks for it (on the loop).
    func ask(_ event: @escaping @Sendable (Token) -> ConductorState.Event, _ reply: Reply) {
        guard reactor.isCurrent else { return reactor.post { [self] in ask(event, reply) } }
        let token = core.access { core -> Token in
            defer { core.nextToken += 1 }
            core.replies[core.nextToken] = reply
            return core.nextToken
        }
        send(event(token))
    }

    // MARK: Effects

    /// Performs one effect on the loop. The loop's bookkeeping (attempts, timers, replies,
    /// waiters) is read or changed apart from the work itself.
    private func perform(_ effect: ConductorState.Effect) {
        assertNoLockHeld("a conductor effect")
        switch effect {
        case let .write(entries, id):
            write(entries) { [weak self] result in
                if case let .failure(error) = result { self?.send(.committed(id, error)) } else { self?.send(.committed(id, nil)) }
            }
        case let .launch(launch):
            let attempt = start(launch)
            core.access { $0.attempts[launch.run] = attempt }
        case let .stop(run, grace):
            core.access { $0.attempts[run] }?.stop(grace: grace)
        case let .schedule(run, timer, delay):
            let id = reactor.after(delay) { [weak self] in self?.send(.timer(run: run, timer)) }
            let old = core.access { core -> Reactor.TimerID? in
                defer { core.timers[run, default: [:]][timer] = id }
                return core.timers[run]?[timer]
            }
            if let old { reactor.cancel(old) }
        case let .cancelTimers(run):
            for timer in core.access({ $0.timers.removeValue(forKey: run) })?.values ?? [:].values { reactor.cancel(timer) }
        case let .answer(token, answer):
            if let reply = core.access({ $0.replies.removeValue(forKey: token) }) { deliver(answer, to: reply) }
        case let .publish(update):
            for waiter in core.access({ $0.waiters[update.run.id] }) ?? [] { waiter(update) }
            if update.transition == nil { publishToWatchers(update, progress: true) }
            else if !options.watchersFedByFleet { publishToWatchers(update) }
        case let .close(run):
            let (waiters, outputFollowers) = core.access { core -> ([Follower], [OutputFollower]) in
                core.attempts[run] = nil
                core.outputs[run] = nil
                core.lines[run] = nil
                core.leaders[run] = nil
                let following = core.outputFollowers.filter { $0.value.run == run }
                for id in following.keys { core.outputFollowers[id] = nil }
                return (core.waiters.removeValue(forKey: run) ?? [], following.values.map(\.follower))
            }
            for waiter in waiters { waiter(nil) }
            for follower in outputFollowers { follower(nil) }
        case .drained:
            sendWrites()
            let continuations = core.access { core in
                defer {
                    core.drained = []
                    core.isDrained = true
                }
                return core.drained
            }
            // Every drain is a stop's (`shutdown`, or `stopRemaining` a second signal sent, maybe
            // before `shutdown` waits): `shutdown` ends the followers itself, after its `settle`.
            for continuation in continuations { continuation.resume() }
        case let .handOver(run, attempt):
            handOver(run, attempt: attempt)
        case .drainedUnwritten:
            // As for `.drained`: the followers stay until `shutdown` ends them, after its `settle`
            // (a run's end committed before then is still told to them).
            sendWrites()
            let continuations = core.access { core -> [CheckedContinuation<Void, Never>] in
                defer {
                    core.drained = []
                    core.isDrained = true
                }
                return core.drained
            }
            for continuation in continuations { continuation.resume() }
        }
    }

    /// The drain is over: every run's followers and output followers hear that nothing more comes.
    func endFollowers() {
        let (waiters, outputFollowers) = core.access { core in
            defer { (core.waiters, core.outputFollowers, core.followersEnded) = ([:], [:], true) }
            return (core.waiters.values.flatMap { $0 }, core.outputFollowers.values.map(\.follower))
        }
        for waiter in waiters { waiter(nil) }
        for follower in outputFollowers { follower(nil) }
    }

    private func start(_ launch: Launch) -> any Attempt {
        let closure = shared.withLock { $0.closures[launch.action.name]?.runner }
        let runner = launch.runner?.runner ?? closure ?? options.execRunner
        var job = Job(runID: launch.run, action: launch.action, attempt: launch.attempt, params: Self.jobParams(launch),
                      instance: options.instance, hook: launch.hook)
        let (run, attempt) = (launch.run, launch.attempt)
        let source = OutputSource(run: run, attempt: attempt, action: launch.action.name, key: outputKey(launch),
                                  keep: launch.action.outputKeep)
        let secrets = SecretRedactor(values: launch.secrets.values)
        startRedaction(source, secrets)
        options.lineSink?.launched(run: run, attempt: attempt)
        let events: @Sendable (AttemptEvent) -> Void = { [weak self] event in
            switch event {
            case let .started(group): self?.attemptStarted(run: run, attempt: attempt, group)
            case let .progress(progress): self?.send(.progress(run: run, attempt: attempt, Self.masked(progress, secrets)))
            case let .output(stream, bytes): self?.keepOutput(source, stream, bytes)
            case let .ended(outcome): self?.attemptEnded(run: run, attempt: attempt, Self.masked(outcome, secrets))
            }
        }
        // The next attempt of a run a previous batond left retrying: its output continues after what the history holds.
        if let at = launch.outputResumesAt {
            core.access { $0.outputs[run] = OutputLimiter(runID: run, keep: launch.action.outputKeep, resumingAt: at) }
        }
        // An attempt a previous batond started: its output continues after what the history holds.
        if let surviving = launch.surviving, let exec = runner as? ExecRunner {
            core.access { $0.outputs[run] = OutputLimiter(runID: run, keep: launch.action.outputKeep, resumingAt: surviving.outputTotal) }
            return exec.attach(job, surviving, events: events)
        }
        job.outputBefore = core.access { $0.outputs[run]?.total } ?? 0
        return runner.start(job, events: events)
    }

    /// The leader's pid names the attempt's lines (on the loop, before any output it posted).
    private func attemptStarted(run: Int64, attempt: Int, _ group: ProcessGroup?) {
        guard reactor.isCurrent else { return reactor.post { [self] in attemptStarted(run: run, attempt: attempt, group) } }
        if options.lineSink != nil, let group { core.access { $0.leaders[run] = group.pgid } }
        send(.started(run: run, attempt: attempt, group))
    }

    /// The attempt's last bytes are written before its end, in the same queue (on the loop,
    /// after any output it posted).
    private func attemptEnded(run: Int64, attempt: Int, _ outcome: AttemptOutcome) {
        guard reactor.isCurrent else { return reactor.post { [self] in attemptEnded(run: run, attempt: attempt, outcome) } }
        let outcome = finishRedaction(run, outcome)
        flushOutput(run, final: true)
        finishLines(run, attempt: attempt)
        send(.exited(run: run, attempt: attempt, outcome))
    }

    private func deliver(_ answer: ConductorState.Answer, to reply: Reply) {
        switch (reply, answer) {
        case let (.trigger(answered, follower), .ticket(decision, run)):
            answered(.success((decision, run)))
            if let follower { follow(run, follower) }
        case let (.cancel(answered), .cancelled(runs)):
            answered(.success(runs))
        case let (.attach(answered, follower), .attached(run)):
            answered(run)
            if let run { follow(run, follower) }
        case let (.recover(answered), .recovered(summary)):
            answered(summary)
        case let (.pause(answered), .paused(pause)):
            answered(.success(pause))
        case let (.pause(answered), .failed(error)):
            answered(.failure(error))
        case let (.pause(answered), _):
            answered(.failure(.internalError("a pause got an answer of the wrong kind: \(answer)")))
        case let (.approval(answered), .approval(run)):
            // The run as it is once the decision is durable, where it is still in flight.
            answered(.success(snapshot(of: run.id) ?? run))
        case let (.approval(answered), .failed(error)):
            answered(.failure(error))
        case let (.approval(answered), _):
            answered(.failure(.internalError("an approval got an answer of the wrong kind: \(answer)")))
        case let (.trigger(answered, _), .failed(error)):
            answered(.failure(error))
        case let (.cancel(answered), .failed(error)):
            answered(.failure(error))
        case let (.attach(answered, _), _):
            answered(nil)
        case let (.trigger(answered, _), _):
            answered(.failure(.internalError("a trigger got an answer of the wrong kind: \(answer)")))
        case let (.cancel(answered), _):
            answered(.failure(.internalError("a cancel got an answer of the wrong kind: \(answer)")))
        case let (.recover(answered), _):
            answered(RecoverySummary())
        }
    }

    /// Starts telling `follower` about a run: the run as it is now, then every update until its end.
    private func follow(_ run: RunSnapshot, _ follower: @escaping Follower) {
        follower(RunUpdate(run: run, transition: nil))
        let known = shared.withLock { $0.state.isInFlight(run.id) }
        let following = core.access { core -> Bool in
            guard known, !core.followersEnded else { return false }
            core.waiters[run.id, default: []].append(follower)
            return true
        }
        if !following { follower(nil) }
    }

    /// Calls the watchers of the update's action (only those that asked for progress, for progress).
    func publishToWatchers(_ update: RunUpdate, progress: Bool = false) {
        let targets = core.access {
            $0.watchers.values.filter { ($0.action == nil || $0.action == update.run.action) && (!progress || $0.progress) }
        }
        for watcher in targets { watcher.follower(update) }
    }
}
