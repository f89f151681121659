/// What a batond starting after another one (or a fleet host taking over a gone one's runs) does
/// with one unfinished run, as a value. A run the history calls `queued` never started: its
/// process starts only once its `loading` is durable (write-ahead, `ConductorState.launchOnceDurable`).
/// So a run that may have started (`loading`, `retrying`) is never queued again, but where its
/// action says `onInterrupt: "restart"`: nothing runs twice that was not asked to. Table-tested
/// (`RecoveryDecisionTests`); used by `ConductorState.recover` and the fleet's `FleetTakeover`.
public enum RecoveryDecision: Sendable, Equatable {
    /// The action is gone from the config: the run ends `cancelled`, reason `removed`.
    case drop
    /// Its shim outlived the previous batond (`ShimAdoption`): in flight again, or ended from its status.
    case adopt
    /// Left waiting to retry, nothing of it lost: it goes on waiting.
    case resumeRetrying
    /// It would start (again), but its secret param's value is gone: `failure`, reason `secret`.
    case endSecret
    /// A stop was asked of it before its end was recorded, and is known: it ends as the stop says,
    /// never started again (not restarted, not resumed). A cancel's and a replace's are written down
    /// (`RunMachine.Stop.outlivesBatond`: the row's `stop`); one machine's replace is also named by
    /// its replacing run's creation. A survivor is adopted instead, and stopped as asked.
    case endStopped
    /// It would start (again) by a definition this host refuses to run (a fleet's stored one whose
    /// process no config of this host gave): `failure`, reason `definition`, as its start would end.
    case endRefused
    /// It may have started and its process is gone: `failure`, reason `interrupted`.
    case interrupt
    /// Queued again: a queued run (never started), or a started one whose action says `restart`.
    case requeue(restarted: Bool)

    /// What is known of one unfinished run.
    public struct Facts: Sendable, Equatable {
        public var phase: Phase
        public var actionKnown = true
        /// Its shim outlived the previous batond and `ShimAdoption` adopts or collects it.
        public var surviving = false
        /// Retrying, and `ConductorState.mayResumeRetrying`.
        public var mayResumeRetrying = false
        /// The action says `onInterrupt: "restart"` (and nothing, such as a replace, is stopping the run).
        public var restarts = false
        /// The action has a secret param, whose value lived in the previous batond's memory only.
        public var secret = false
        /// Loading or retrying, a stop was asked of it that its end has not recorded (`UnfinishedRun.stop`,
        /// a fleet's `runs.stop` mark).
        public var stopped = false
        /// Its action is known, but by a definition this host refuses to run (a fleet's: `FleetCoordinator.lookUp`).
        public var refused = false

        public init(phase: Phase, actionKnown: Bool = true, surviving: Bool = false, mayResumeRetrying: Bool = false,
                    restarts: Bool = false, secret: Bool = false, stopped: Bool = false, refused: Bool = false) {
            (self.phase, self.actionKnown, self.surviving) = (phase, actionKnown, surviving)
            (self.mayResumeRetrying, self.restarts, self.secret, self.stopped) = (mayResumeRetrying, restarts, secret, stopped)
            self.refused = refused
        }
    }

    /// The facts of one unfinished run as the history has it (`unfinished`: its phase, its stop
    /// mark, its retry's due time), by `action` (nil: none known here) or a definition this host
    /// `refused`, for one machine's recovery and a fleet host's takeover alike. `draining`: a
    /// replace is stopping it (its key's `draining`; asked only where a restart or a resume hangs
    /// on it): its replacement waits for its end, so it is neither restarted nor resumed.
    public static func facts(_ unfinished: UnfinishedRun, action: Action?, refused: Bool = false, surviving: Bool = false,
                             draining: () throws -> Bool) rethrows -> Facts {
        let phase = unfinished.run.phase
        let restarts = action?.onInterrupt == .restart && phase != .queued
        let resumes = mayResumeRetrying(unfinished, action)
        let drains = restarts || resumes ? try draining() : false
        return Facts(phase: phase, actionKnown: action != nil || refused, surviving: surviving, mayResumeRetrying: resumes && !drains,
                     restarts: restarts && !drains, secret: losesSecret(action), stopped: unfinished.stop != nil, refused: refused)
    }

    /// `facts` of a run no replace is stopping (one machine's recovery: a replaced run's stop is its mark).
    public static func facts(_ unfinished: UnfinishedRun, action: Action?, refused: Bool = false, surviving: Bool = false) -> Facts {
        facts(unfinished, action: action, refused: refused, surviving: surviving, draining: { false })
    }

    /// The `mayResumeRetrying` fact of one unfinished run, for one machine's recovery and a fleet
    /// host's take-back alike: retrying, its next attempt's due time known, and
    /// `ConductorState.mayResumeRetrying` (its action survives restarts, no hook's run, an attempt ran).
    public static func mayResumeRetrying(_ unfinished: UnfinishedRun, _ action: Action?) -> Bool {
        guard let action, unfinished.run.phase == .retrying, unfinished.retryDue != nil else { return false }
        return ConductorState.mayResumeRetrying(unfinished, action)
    }

    /// The `secret` fact of a run of `action`: the action has a secret param, whose value lived in
    /// the memory of the batond (the fleet host) that took the trigger, gone with it.
    public static func losesSecret(_ action: Action?) -> Bool { action?.secretParams.isEmpty == false }

    /// Why a run that `endSecret` ends `failure`, reason `secret`: it was `phase` when the batond
    /// (the fleet host) holding its secret's value stopped. One machine's recovery and the fleet's takeover write it alike.
    public static func secretDetail(_ action: Action, phase: Phase) -> TransitionDetail {
        TransitionDetail(reason: "secret", error: "batond stopped before the run \(phase == .queued ? "started" : "could start again"): "
                         + "the value of its secret param \(action.secretParams.first ?? "") was kept in memory only")
    }

    /// The window of a debounced run that recovery queues again at `now`, queued at `queuedAt`
    /// (nil where its action does not debounce): a window from `now`, as far as `maxWait` from its
    /// creation allows, since the triggers that came before the stop are not known to have stopped.
    /// One machine's restart and a fleet host's takeover (its row's window) alike.
    public static func window(_ action: Action, queuedAt: Timestamp, at now: Timestamp) -> DebounceWindow? {
        var window = DebounceWindow(action, first: queuedAt)
        window?.restart(at: now)
        return window
    }

    public static func decide(_ facts: Facts) -> RecoveryDecision {
        let adopts = facts.surviving && facts.phase == .loading
        // As its store's stop reader would have ended it (its action gone or not): a replaced run's
        // replacement waits for this end, and a run started again here would run what was stopped.
        if facts.stopped, facts.phase != .queued, !adopts { return .endStopped }
        guard facts.actionKnown else { return .drop }
        if adopts { return .adopt }
        // Nothing of it runs here: a queued run, and a retrying one (its next attempt is due), end as their
        // start would; a loading one, whose process is gone, restarts nowhere here.
        if facts.refused { return facts.phase == .loading ? .interrupt : .endRefused }
        if facts.phase == .retrying, facts.mayResumeRetrying { return .resumeRetrying }
        let startsAgain = facts.phase == .queued || facts.restarts
        guard startsAgain else { return .interrupt }
        return facts.secret ? .endSecret : .requeue(restarted: facts.phase != .queued)
    }
}
