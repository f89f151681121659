#if canImport(Glibc)
import Glibc
#endif

/// Runs actions with single flight per key and records every phase change: the heart of Baton.
///
/// All decisions are `ConductorState`'s; this class only feeds it events and performs the
/// effects it returns. Events come from any thread (request tasks, the store's writer, the
/// reactor's attempts and timers) into one inbox; whichever thread finds the inbox idle drains
/// it, handling each event and performing all of its effects before the next, never waiting in
/// between. Nothing is awaited inside the conductor: callers wait for their answer only.
public final class Conductor: Sendable {
    /// What a conductor is built with.
    public struct Options: Sendable {
        /// The most runs loading or retrying at once, across all keys.
        public var maxConcurrentRuns: Int
        /// Starts the attempts of actions that run a process.
        public var execRunner: any Runner
        /// Seeds backoff jitter.
        public var seed: UInt64
        /// Names this conductor's history (batond: the database path). Processes of its runs carry it
        /// as `BATON_INSTANCE`, with `BATON_RUN_ID`, so that recovery finds them even when a crash
        /// came before their process group was recorded.
        public var instance: String?
        /// Watchers hear transitions from the fleet's feed (every host's, in commit order), not
        /// from this conductor as it commits them.
        public var watchersFedByFleet: Bool

        public init(maxConcurrentRuns: Int = Conductor.processorCount, execRunner: any Runner = ExecRunner(),
                    seed: UInt64 = UInt64.random(in: 0...UInt64.max), instance: String? = nil, watchersFedByFleet: Bool = false) {
            self.maxConcurrentRuns = maxConcurrentRuns
            self.execRunner = execRunner
            self.seed = seed
            self.instance = instance
            self.watchersFedByFleet = watchersFedByFleet
        }
    }

    /// The number of online CPUs, the default concurrency limit.
    public static var processorCount: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    typealias Token = ConductorState.Token

    /// Told each update of a run it follows, in order, then nil once the run's end is durable (or
    /// batond stops first). Called on whichever thread drains the inbox: it must not block.
    public typealias Follower = @Sendable (RunUpdate?) -> Void

    /// A caller waiting for its answer; answers are called on the draining thread.
    enum Reply {
        case trigger(@Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void, follower: Follower?)
        case cancel(@Sendable (Result<[RunSnapshot], BatonError>) -> Void)
        case attach(@Sendable (RunSnapshot?) -> Void, follower: Follower)
        case recover(@Sendable (RecoverySummary) -> Void)
    }

    /// Everything the draining thread changes; other threads take the lock only to read or to
    /// register a reply.
    struct Core {
        var state: ConductorState
        /// Configured and registered actions, by name (the service resolves triggers itself).
        var actions: [String: Action]
        var closures: [String: RunnerBox] = [:]
        var attempts: [Int64: any Attempt] = [:]
        var timers: [Int64: [ConductorState.Timer: Reactor.TimerID]] = [:]
        var replies: [Token: Reply] = [:]
        var nextToken: Token = 1
        var waiters: [Int64: [Follower]] = [:]
        var drained: [CheckedContinuation<Void, Never>] = []
        var isDrained = false
    }

    struct Inbox {
        var events: [ConductorState.Event] = []
        var head = 0
        var draining = false

        /// Adds an event; true when the caller must drain (nobody else is).
        mutating func push(_ event: ConductorState.Event) -> Bool {
            events.append(event)
            if draining { return false }
            draining = true
            return true
        }

        /// The next event, or nil (and no longer draining) when there is none.
        mutating func pop() -> ConductorState.Event? {
            guard head < events.count else {
                events.removeAll(keepingCapacity: events.capacity <= 1_024)
                head = 0
                draining = false
                return nil
            }
            defer { head += 1 }
            return events[head]
        }
    }

    let store: any RunStore
    let options: Options
    let reactor = Reactor.shared
    private let inbox = Locked(Inbox())
    let core: Locked<Core>
    /// Watchers of every committed transition (of one action, or all): their own lock, because
    /// ending a watch's stream calls its termination handler, which removes it.
    let watchers = Locked<(next: Int, all: [Int: Watcher])>((0, [:]))

    /// Who follows the transitions (and, when it asked, the progress) of one action or all.
    struct Watcher {
        var action: String?
        var progress: Bool
        var follower: Follower
    }

    public init(actions: [Action], store: any RunStore = MemoryStore(), options: Options = Options()) {
        self.store = store
        self.options = options
        let registry = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        core = Locked(Core(state: ConductorState(maxConcurrentRuns: options.maxConcurrentRuns, seed: options.seed),
                           actions: registry))
    }

    // MARK: The inbox

    /// Hands an event to the conductor; if no thread is draining the inbox, this one does.
    func send(_ event: ConductorState.Event) {
        guard inbox.withLock({ $0.push(event) }) else { return }
        while let next = inbox.withLock({ $0.pop() }) {
            core.withLock { core in
                for effect in core.state.handle(next, at: .now) { perform(effect, &core) }
            }
        }
    }

    /// Registers a reply and sends the event that asks for it.
    func ask(_ event: (Token) -> ConductorState.Event, _ reply: Reply) {
        let token = core.withLock { core -> Token in
            defer { core.nextToken += 1 }
            core.replies[core.nextToken] = reply
            return core.nextToken
        }
        send(event(token))
    }

    // MARK: Effects

    private func perform(_ effect: ConductorState.Effect, _ core: inout Core) {
        switch effect {
        case let .write(entries, id):
            store.enqueue(entries) { [weak self] result in
                if case let .failure(error) = result { self?.send(.committed(id, error)) } else { self?.send(.committed(id, nil)) }
            }
        case let .launch(launch):
            core.attempts[launch.run] = start(launch, core)
        case let .stop(run, grace):
            core.attempts[run]?.stop(grace: grace)
        case let .schedule(run, timer, delay):
            if let old = core.timers[run]?[timer] { reactor.cancel(old) }
            core.timers[run, default: [:]][timer] = reactor.after(delay) { [weak self] in self?.send(.timer(run: run, timer)) }
        case let .cancelTimers(run):
            for timer in core.timers.removeValue(forKey: run)?.values ?? [:].values { reactor.cancel(timer) }
        case let .answer(token, answer):
            if let reply = core.replies.removeValue(forKey: token) { deliver(answer, to: reply, &core) }
        case let .publish(update):
            for waiter in core.waiters[update.run.id] ?? [] { waiter(update) }
            if update.transition == nil { publishToWatchers(update, progress: true) }
            else if !options.watchersFedByFleet { publishToWatchers(update) }
        case let .close(run):
            for waiter in core.waiters.removeValue(forKey: run) ?? [] { waiter(nil) }
            core.attempts[run] = nil
        case .drained:
            for waiters in core.waiters.values { for waiter in waiters { waiter(nil) } }
            core.waiters = [:]
            core.isDrained = true
            for continuation in core.drained { continuation.resume() }
            core.drained = []
        }
    }

    private func start(_ launch: Launch, _ core: Core) -> any Attempt {
        let runner = launch.runner?.runner ?? core.closures[launch.action.name]?.runner ?? options.execRunner
        let job = Job(runID: launch.run, action: launch.action, attempt: launch.attempt, params: launch.params,
                      instance: options.instance)
        let (run, attempt) = (launch.run, launch.attempt)
        return runner.start(job) { [weak self] event in
            switch event {
            case let .started(group): self?.send(.started(run: run, attempt: attempt, group))
            case let .progress(progress): self?.send(.progress(run: run, attempt: attempt, progress))
            case let .ended(outcome): self?.send(.exited(run: run, attempt: attempt, outcome))
            }
        }
    }

    private func deliver(_ answer: ConductorState.Answer, to reply: Reply, _ core: inout Core) {
        switch (reply, answer) {
        case let (.trigger(answered, follower), .ticket(decision, run)):
            answered(.success((decision, run)))
            if let follower { follow(run, follower, &core) }
        case let (.cancel(answered), .cancelled(runs)):
            answered(.success(runs))
        case let (.attach(answered, follower), .attached(run)):
            answered(run)
            if let run { follow(run, follower, &core) }
        case let (.recover(answered), .recovered(summary)):
            answered(summary)
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
    private func follow(_ run: RunSnapshot, _ follower: @escaping Follower, _ core: inout Core) {
        follower(RunUpdate(run: run, transition: nil))
        if core.state.snapshot(of: run.id) != nil, !core.isDrained {
            core.waiters[run.id, default: []].append(follower)
        } else {
            follower(nil)
        }
    }

    /// Calls the watchers of the update's action (only those that asked for progress, for progress).
    func publishToWatchers(_ update: RunUpdate, progress: Bool = false) {
        let targets = watchers.withLock {
            $0.all.values.filter { ($0.action == nil || $0.action == update.run.action) && (!progress || $0.progress) }
        }
        for watcher in targets { watcher.follower(update) }
    }
}
