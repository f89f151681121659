/// Everything the conductor decides, as one value: the single-flight table, a machine per run in
/// flight, which writes are not yet durable, and whether it still takes triggers. An event goes
/// in, the effects to perform come out, in order; the `Conductor` performs them and reports what
/// came of them (commits, exits, timers) as further events. Nothing here waits, reads a clock or
/// touches a process, a socket or the store.
///
/// Invariants, checked after every step by the random-walk test:
/// - a key has at most one run loading or retrying, and at most one follow-up (`FlightTable`);
/// - a run starts only once its creation is durable, and after its key's previous runs are gone;
/// - a run's writes reach the store in the order its transitions happened, with contiguous `seq`,
///   each along `Phase.allows`;
/// - every question (trigger, cancel, attach, recovery) is answered exactly once, and only after
///   every write decided with it is durable;
/// - a run's waiters are closed once its terminal transition is durable, and never before;
/// - at most one run is created per action and schedule slot (`SlotBook`);
/// - no lock is held by more runs loading or retrying than its limit, and no run ready to start
///   waits while a start slot and its locks are free, counting the older runs waiting for them
///   (`LockBook`, `ConductorState+Locks.swift`);
/// - no run is created inside its key's cooldown window (from the last success's end, decided
///   or seeded) unless its trigger is forced where the action allows it (`KeySlot.cools`);
/// - every end that qualifies for a hook writes that hook's trigger in the item of the end, once
///   (`ConductorState+Hooks`);
/// - a debounced trigger that finds a run of its key not yet started shares it, so a burst makes
///   one run, and that run starts no sooner than the window after the burst's last trigger, or
///   `maxWait` after its first (`ConductorState+Debounce`, `DebounceWindow`);
/// - no more runs of a rate-limited key or action start in any window of its `per` than its
///   `runs` (`ConductorState+Rate`, `RateBook`);
/// - no run starts before every run it needs succeeded, nor ever once one did not (`NeedBook`);
/// - no run of an action with `approve` starts without an approval, and each approval is decided
///   at most once (`ConductorState+Approvals`).
public struct ConductorState: Sendable {
    /// Identifies a caller waiting for an answer.
    public typealias Token = UInt64
    /// Identifies one group of writes handed to the store.
    public typealias CommitID = UInt64

    /// What can happen to the conductor. The cases with a large payload are `indirect`: an event is
    /// copied into and out of the inbox and the state's switch, and a copy of a boxed payload is
    /// one reference count, not a copy of each field (issue 39).
    public enum Event: Sendable, Equatable {
        /// A trigger, already checked against its action: decide it.
        indirect case trigger(Token, Trigger)
        /// The store committed a group of writes, or failed to (with the error).
        case committed(CommitID, BatonError?)
        /// An attempt's process started (its group, to kill after a crash) or its task did.
        case started(run: Int64, attempt: Int, ProcessGroup?)
        /// An attempt reported progress.
        case progress(run: Int64, attempt: Int, Progress)
        /// An attempt is over: its process group is gone, or its task returned.
        indirect case exited(run: Int64, attempt: Int, AttemptOutcome)
        /// A timer the state set went off.
        case timer(run: Int64, Timer)
        /// Cancel runs in flight; answered with the runs it stopped.
        case cancel(Token, CancelTarget, by: UInt32?, principal: String? = nil)
        /// Follow a run: answered with its snapshot, or nil when it is not in flight.
        case attach(Token, run: Int64)
        /// Stop taking triggers; runs in flight go on until `graceElapsed`.
        case shutdown
        /// The shutdown grace is over: stop every run still loading or retrying.
        case graceElapsed
        /// A second stop signal: end the grace now and stop waiting for writes — drained once
        /// every run's end is decided (its processes gone), durable or not. A full disk would
        /// otherwise hold the exit for as long as it lasts; what is not written by then is
        /// logged, and recovery ends those runs at the next start (issue 21, item 13).
        case abandonWrites
        /// Take over the runs a previous daemon left unfinished (with their actions, where still configured).
        indirect case recover(Token, [RecoveredRun])
        /// Run a run whose start the fleet already made durable (its `loading` is written);
        /// answered with the run (`attached`).
        indirect case adopt(Token, AdoptedRun)
        /// `baton pause`: the action refuses triggers until resumed or the pause's end. Answered `.paused`.
        case pause(Token, ActionPause)
        /// `baton resume`: the action's pause ends, by whom. Answered `.paused` with the pause it ended (nil: none).
        case resume(Token, action: String, by: String)
        /// A fleet host read the fleet's pauses as committed (every action paused now, on any
        /// host), the read begun at `readAt`: its own view of them follows, with nothing written
        /// (they are durable already).
        case pausesSeen([ActionPause], readAt: Timestamp)
        /// Stop one run as another host asked (a replace, or a cancel sent from elsewhere).
        case stopRun(Int64, RunMachine.Stop)
        /// `baton approve RUN` (true) or `baton deny RUN --reason …` (false) by `Approver`: decided
        /// once (`ConductorState+Approvals`). Answered `.approval` or refused.
        case approval(Token, run: Int64, Approver, approve: Bool, reason: String?)
        /// `handOver`'s answer: left to its shim (`kept`), or batond's to stop (`ConductorState+HandOver`).
        case handedOver(run: Int64, attempt: Int, kept: Bool)
        /// The config was reloaded: every action configured now, by name. A run waiting for its
        /// approval whose action gives the wait up now is waived (`ConductorState+Approvals`).
        indirect case reloaded([String: Action])
    }

    /// What the conductor must do, in the order given (the large payloads `indirect`, as `Event`'s).
    public enum Effect: Sendable, Equatable {
        /// Hand these entries to the store as one item; report the commit as `committed(id, …)`.
        case write([JournalEntry], CommitID)
        /// Start an attempt; report it with `started`, `progress` and `exited`.
        indirect case launch(Launch)
        /// Stop a run's attempt: SIGTERM to its process group, SIGKILL after `grace`.
        case stop(run: Int64, grace: Duration)
        /// Report `timer(run, timer)` after `after`, replacing a timer of the same run and kind.
        case schedule(run: Int64, Timer, after: Duration)
        /// The run has ended: drop its timers.
        case cancelTimers(run: Int64)
        /// Answer a caller.
        indirect case answer(Token, Answer)
        /// Tell a run's waiters (and, for committed transitions, every watcher) about it.
        indirect case publish(RunUpdate)
        /// The run's story is over and durable: end its waiters' streams.
        case close(run: Int64)
        /// Shutting down and nothing is loading any more (and, unless writes were abandoned,
        /// every end is durable): the daemon may exit.
        case drained
        /// Shutting down after `abandonWrites`: nothing runs any more, but some ends are not yet
        /// durable. The daemon may exit without them; a waiter still hears an end that commits
        /// before it does (the run's `close`).
        case drainedUnwritten
        /// Shutting down: leave the run's attempt to its shim, then report `handedOver` (`ConductorState+HandOver`).
        case handOver(run: Int64, attempt: Int)
    }

    /// A timer a run may have.
    public enum Timer: Sendable, Hashable {
        /// The run's deadline, from its first attempt, retries included.
        case timeout
        /// The wait before attempt `n + 1`.
        case backoff(Int)
        /// The end of a run's progress window: the latest progress held back is told now.
        case progress
        /// The end of a debounced run's quiet window: it may start (`ConductorState+Debounce`).
        case debounce
        /// A timed pause of the run's action may have ended: the run may start again.
        case pauseEnd
        /// A start of the run's rate limit may fit again (`ConductorState+Rate`).
        case rateLimit
        /// The end of a run's wait for approval (`approve.timeout`): undecided, it is cancelled.
        case approval
    }

    /// The most often a run's progress is told: a run that writes 100,000 progress lines a second
    /// gives its followers and watchers 20 updates a second, each the latest (issue 21, item 5:
    /// a waiting client was cut off by the flood).
    public static let progressInterval: Duration = .milliseconds(50)

    /// Which runs a cancel is for.
    public enum CancelTarget: Sendable, Equatable {
        case run(Int64)
        /// Every run of the action, or of one key of it.
        case action(String, key: String?)
    }

    /// An answer to a caller.
    public enum Answer: Sendable, Equatable {
        /// The trigger's decision and the run as it is now.
        case ticket(FlightTable.Decision, RunSnapshot)
        case failed(BatonError)
        /// The runs a cancel stopped, as they are now: cancelled, or still loading while their processes stop.
        case cancelled([RunSnapshot])
        /// The run in flight to follow, or nil when it is not in flight.
        case attached(RunSnapshot?)
        case recovered(RecoverySummary)
        /// A pause made, or the pause a resume ended (nil: the action was not paused).
        case paused(ActionPause?)
        /// An approve or deny, as decided: the run as the decision left it (started, or ended by a deny).
        case approval(RunSnapshot)
    }

    /// Whether triggers are taken.
    public enum Mode: Sendable, Equatable {
        case accepting, draining, stopped
    }

    var table: FlightTable
    /// How many runs are loading or retrying.
    public var runningCount: Int { table.running }
    var flights: IDMap<Int64, Flight> = [:]
    /// What to do once each group of writes is durable.
    var pending: IDMap<CommitID, [AfterCommit]> = [:]
    public internal(set) var nextRunID: Int64 = 1
    var nextCommit: CommitID = 1
    public internal(set) var mode = Mode.accepting
    /// Whether draining waits for every end to be durable; false after `abandonWrites`.
    public internal(set) var waitsForWrites = true
    /// The last run of each action whose end is durable, for `status`.
    public internal(set) var lastEnded: [String: RunSnapshot] = [:]
    /// The last success of each key whose action has a cooldown, from when it is decided (seeded
    /// from the history at start, so that a restart keeps every window): what `cooled` answers with.
    public internal(set) var successes: [String: RunSnapshot] = [:]
    /// When each key's success in `successes` ended on the boot's clock, for the successes this
    /// process decided (those seeded from the history have only their wall-clock end).
    var successUptimes: [String: (run: Int64, at: Duration)] = [:]
    /// The last outcome (success or failure) of each key whose action has a `change` hook, from
    /// when it is decided (seeded from the history at start): what `change` compares against.
    public internal(set) var outcomes: [String: Phase] = [:]
    /// Whether a run's end hands its hooks to the store (`JournalEntry.hooks`) instead of
    /// deciding them against this table: a fleet host, whose keys are rows in PostgreSQL.
    public var storeDecidesHooks = false
    /// Whether a shutdown leaves the runs that survive restarts to their shims; with `leavesRetrying` (not on a fleet host, whose next start takes back only loading runs) the runs waiting to retry too.
    public var handsOver = false, leavesRetrying = true
    /// The shutdown's grace is over: a run whose hand-over fails from now on is stopped at once.
    var graceOver = false
    /// The run each scheduled slot made (seeded from the history at start): what a trigger of the
    /// same slot joins or is answered with.
    public internal(set) var slots = SlotBook()
    /// Recent successful durations per action, for estimated progress.
    public internal(set) var estimates = DurationEstimates()
    /// Each paused action's pause (`baton pause`, `pauseAfterFailures`), seeded from the history at start.
    public internal(set) var pauses: [String: ActionPause] = [:]
    /// The runs waiting for the runs they need (`needs`), and what each waits for.
    public internal(set) var needBook = NeedBook()
    /// The approvals of the runs in flight (`approve`): waiting, or decided (a second approve or
    /// deny is answered with the first); forgotten once the run is closed.
    public internal(set) var approvals: IDMap<Int64, ApprovalState> = [:]
    /// The actions the last reload configured, by name (nil: none since the start). A run made
    /// later from a definition before it (a hook's target, a need's, a trigger decided against the
    /// older config) whose wait that reload gave up is waived at its creation (`newApproval`).
    var reloadedActions: [String: Action]?
    /// Each action with `pauseAfterFailures`: its failures in a row since batond started.
    var failureStreaks: [String: Int] = [:]
    /// When this conductor last paused or resumed each action, and when the latest read of the
    /// fleet's pauses it took began (`pausesSeen`): a read begun before a change is older news.
    var pauseChanged: [String: Timestamp] = [:]
    var pausesRead: Timestamp?
    /// Whether the store counts `pauseAfterFailures` over every host's runs in the transaction
    /// that writes an end (a fleet host: `ConductorState.failureStreak` on its rows) instead of
    /// this table counting this host's.
    public var storeCountsFailures = false
    /// Backoff jitter: a deterministic generator, so that a seed replays a whole history.
    var random: SplitMix

    public init(maxConcurrentRuns: Int, seed: UInt64 = 0x5EED) {
        table = FlightTable(limit: maxConcurrentRuns)
        random = SplitMix(seed: seed)
    }

    /// Applies one event at time `now` (and `uptime` on the boot's clock, which never steps);
    /// returns the effects to perform, in order.
    public mutating func handle(_ event: Event, at now: Timestamp, uptime: Duration? = nil) -> [Effect] {
        var step = Step(now: now, uptime: uptime)
        switch event {
        case let .trigger(token, trigger): decide(token, trigger, &step)
        case let .committed(id, failure): committed(id, failure, &step)
        case let .started(run, attempt, group): started(run, attempt, group, &step)
        case let .progress(run, attempt, progress): progressed(run, attempt, progress, &step)
        case let .exited(run, attempt, outcome): exited(run, attempt, outcome, &step)
        case let .timer(run, timer): fired(run, timer, &step)
        case let .cancel(token, target, by, principal): cancel(token, target, by: by, principal: principal, &step)
        case let .attach(token, run): step.answer(token, .attached(recordedSnapshot(run)))
        case .shutdown: beginShutdown(&step)
        case .graceElapsed: graceElapsed(&step)
        case .abandonWrites: abandonWrites(&step)
        case let .recover(token, runs): recover(token, runs, &step)
        case let .adopt(token, adopted): adopt(token, adopted, &step)
        case let .stopRun(run, stop): if flights[run]?.isOver == false { drive(run, .stop(stop), &step) }
        case let .pause(token, pause): self.pause(token, pause, &step)
        case let .resume(token, action, by): resume(token, action: action, by: by, &step)
        case let .pausesSeen(list, readAt): seen(pauses: list, readAt: readAt, &step)
        case let .approval(token, run, approver, approve, reason):
            decideApproval(token, run: run, approver, approve: approve, reason: reason, &step)
        case let .handedOver(run, attempt, kept): handedOver(run, attempt: attempt, kept: kept, &step)
        case let .reloaded(actions): waiveApprovals(configured: actions, &step)
        }
        return finish(&step)
    }

    // MARK: Reading

    /// The runs in flight, oldest first (a run whose end is decided but not yet durable included,
    /// with its final phase).
    public var inFlight: [RunSnapshot] {
        flights.values.map(live).sorted { $0.id < $1.id }
    }


    /// Runs loading or retrying, or ended but not yet durable: what shutdown waits for.
    var activeCount: Int { flights.values.count { $0.machine.phase != .queued && $0.handOver != .done } }

    /// Runs loading or retrying whose end is not decided: what shutdown waits for once it no
    /// longer waits for writes.
    var undecidedCount: Int { flights.values.count { $0.machine.phase != .queued && !$0.isOver && $0.handOver != .done } }
}

/// A run left unfinished by a previous daemon, with its action if it is still configured.
public struct RecoveredRun: Sendable, Equatable {
    public var unfinished: UnfinishedRun
    public var action: Action?
    /// Its attempt whose shim outlived the previous batond (`ShimAdoption`): the run stays in flight.
    public var surviving: SurvivingAttempt?

    public init(_ unfinished: UnfinishedRun, action: Action?) {
        self.unfinished = unfinished
        self.action = action
    }
}

/// What an attempt is started with.
public struct Launch: Sendable, Equatable {
    public var run: Int64
    public var attempt: Int
    public var action: Action
    public var params: [String: String]
    public var runner: RunnerBox?
    /// What a hook run is told of the run whose end fired it.
    public var hook: HookContext?
    /// The secret params' values (`params` holds `***` for them), for the process only.
    public var secrets: [String: String] = [:]
    /// An attempt a previous batond started, whose shim still runs or kept its status: attached
    /// to, not spawned.
    public var surviving: SurvivingAttempt?
    /// The first attempt of a run a previous batond left retrying: its output goes on after the bytes the history holds.
    public var outputResumesAt: Int64?
}

/// A runner compared by identity, so that events and effects stay comparable values.
public final class RunnerBox: Sendable, Equatable {
    public let runner: any Runner
    public init(_ runner: any Runner) { self.runner = runner }
    public static func == (lhs: RunnerBox, rhs: RunnerBox) -> Bool { lhs === rhs }
}
