/// What a trigger of one key does: the whole pipeline, decided once, for a host's triggers, a
/// host's hooks, the fleet's trigger batches and the fleet's hooks alike. Each of them fills the
/// key's `KeyFacts` (a host from its flights, the fleet from the rows it holds locked), of which
/// the engine makes its `View` (`KeyDecision.view`), and performs the decision its own way
/// (store entries, or SQL); the order of the rules is here only:
///
/// 0. a paused action runs nothing: the trigger is refused `paused` (a schedule slot is recorded as
///    skipped); under a held pause (`--hold`) it goes on to the rules below, and the run it makes
///    waits `queued` until the pause ends (a schedule slot too: the key's policy coalesces them);
/// 1. a webhook delivery that already made or joined a run is refused (`delivered`);
/// 2. a scheduled trigger whose slot has a run joins it in flight, or runs nothing once it ended;
/// 3. a debounced trigger joins its key's pending run and pushes its window back;
/// 4. inside the cooldown after the key's last success, nothing runs;
/// 5. otherwise the key's policy decides (`KeySlot.trigger`): create, follow up (in a line of
///    up to the action's `queueDepth`), join, coalesce, reject (or refuse a full line) or replace;
///    a decision that would make a run over the action's `rateLimit` (`over: reject`) is refused
///    `rate_limited` instead (`over: delay`: the run is made, and waits for its start to fit).
///
/// A join of a run made from another definition of the action is refused (the fleet knows the
/// definitions; one machine has one).
public enum KeyDecision: Sendable, Equatable {
    /// Nothing is written; the trigger is answered with this error.
    case refused(BatonError)
    /// It shares a run and makes none: joined, coalesced, rejected, cooled, or its slot ran.
    case shared(FlightTable.Decision)
    /// It joined its key's pending debounced run, whose window it pushed back to `window`.
    case debounced(run: Int64, window: DebounceWindow)
    /// Its action is paused: nothing runs, and the trigger is refused with the pause, recorded as
    /// `paused` (`skipped`: a schedule slot's, whose time passes).
    case paused(ActionPause, skipped: Bool)
    /// It would make a run over its action's rate limit (`over: reject`): nothing runs, the
    /// trigger is refused naming the limit and when a run may start (`next`), recorded as `rate limited`.
    case rateLimited(RateLimit, next: Timestamp)
    /// It makes a run (created, follow-up, replacing): with its own window when it debounces.
    /// A replace's `stopping` runs are stopped by the caller's one stop function.
    case created(FlightTable.Decision, window: DebounceWindow?)

    /// What is asked: the parts of a trigger (or a hook's trigger) the rules read.
    public struct Asked: Sendable, Equatable {
        public var action: Action
        public var policy: Policy
        public var force: Bool
        public var delivery: Delivery?
        public var slot: Timestamp?
        /// The trigger's params: a line longer than one is joined only by a trigger with a waiting entry's params.
        public var params: [String: String]

        public init(action: Action, policy: Policy, force: Bool = false, delivery: Delivery? = nil, slot: Timestamp? = nil,
                    params: [String: String] = [:]) {
            self.params = params
            self.action = action
            self.policy = policy
            self.force = force
            self.delivery = delivery
            self.slot = slot
        }

        /// A trigger from a client, a schedule or a webhook.
        public init(_ trigger: Trigger) {
            self.init(action: trigger.action, policy: trigger.policy, force: trigger.force, delivery: trigger.delivery, slot: trigger.slot,
                      params: trigger.params)
        }

        /// A hook's trigger: from nobody, under its action's own policy, never forced.
        public init(hook action: Action, params: [String: String] = [:]) {
            self.init(action: action, policy: action.policy, params: params)
        }
    }

    /// What is known of the key when the trigger is decided.
    public struct View: Sendable, Equatable {
        /// The key's holder, follow-up and draining runs.
        public var slot: KeySlot
        /// The clock the windows are measured on (a fleet: the database's, read under the key's lock).
        public var now: Timestamp
        /// The boot's clock (which never steps), where the decider reads it: a cooldown is measured on it.
        public var uptime: Duration?
        /// The run the trigger's delivery already made or joined.
        public var delivered: Int64?
        /// The run the trigger's schedule slot already has.
        public var slotRun: SlotRun?
        /// The key's run not yet started that debounces, with its window as kept.
        public var pending: Pending?
        /// The key's last success of the same action.
        public var lastSuccess: LastSuccess?
        /// Where known (a fleet), the definition each run of the key was made from.
        public var definitions: [Int64: Definition]
        /// The params of the runs waiting in the key's line (a line longer than one is joined by params).
        public var lineParams: [Int64: [String: String]] = [:]
        /// The action's pause, where it holds at `now`.
        public var paused: ActionPause?
        /// The action's rate limit and when a new run of the key could start under it (nil: now).
        public var rate: Rate?

        public init(slot: KeySlot, now: Timestamp, delivered: Int64? = nil, slotRun: SlotRun? = nil, pending: Pending? = nil,
                    lastSuccess: LastSuccess? = nil, definitions: [Int64: Definition] = [:]) {
            self.slot = slot
            self.now = now
            self.delivered = delivered
            self.slotRun = slotRun
            self.pending = pending
            self.lastSuccess = lastSuccess
            self.definitions = definitions
        }
    }

    /// A rate limit, and when a new run's start would fit under it: nil when now (the runs of its
    /// bucket not yet started counted as if they started now).
    public struct Rate: Sendable, Equatable {
        public var limit: RateLimit
        public var next: Timestamp?
        /// The same for a replace, which stops the key's runs not yet started: they are not counted.
        public var nextReplacing: Timestamp?
        public init(limit: RateLimit, next: Timestamp?) {
            self.init(limit: limit, next: next, nextReplacing: next)
        }
        public init(limit: RateLimit, next: Timestamp?, nextReplacing: Timestamp?) {
            self.limit = limit
            self.next = next
            self.nextReplacing = nextReplacing
        }
    }

    /// A schedule slot's run, and whether it has ended.
    public struct SlotRun: Sendable, Equatable {
        public var run: Int64
        public var ended: Bool
        public init(run: Int64, ended: Bool) {
            self.run = run
            self.ended = ended
        }
    }

    /// A debounced run not yet started, and its window.
    public struct Pending: Sendable, Equatable {
        public var run: Int64
        public var window: DebounceWindow
        public init(run: Int64, window: DebounceWindow) {
            self.run = run
            self.window = window
        }
    }

    /// A key's last success: its run and when it ended (`uptime`: on the boot's clock, where
    /// this process saw it end).
    public struct LastSuccess: Sendable, Equatable {
        public var run: Int64
        public var at: Timestamp
        public var uptime: Duration?
        public init(run: Int64, at: Timestamp, uptime: Duration? = nil) {
            self.run = run
            self.at = at
            self.uptime = uptime
        }

        /// The time since the success on the boot's clock, when both readings are on it.
        public func elapsed(at uptime: Duration?) -> Duration? {
            guard let uptime, let ended = self.uptime else { return nil }
            return uptime - ended
        }
    }

    /// The definition (`Action.fingerprint`) a run was made from, and the host that made it.
    public struct Definition: Sendable, Equatable {
        public var fingerprint: String
        public var host: String?
        public init(fingerprint: String, host: String?) {
            self.fingerprint = fingerprint
            self.host = host
        }
    }

    /// Decides `asked` against `view`; `slot` is the key's slot as the decision leaves it.
    /// `candidate` gives the id a new run takes, and is called only when the policy may make one.
    public static func decide(_ asked: Asked, _ view: View, slot: inout KeySlot, candidate: () -> Int64) -> KeyDecision {
        decide(asked, view, slot: &slot, candidate: candidate, fingerprint: { asked.action.fingerprint })
    }

    /// The same, with the asked action's fingerprint from `fingerprint` (a fleet's batch keeps it
    /// per action): called only to compare it with the definition of a run the trigger would share.
    /// `candidate` may throw (a store that takes each id in its own round trip): so does the decision.
    public static func decide(_ asked: Asked, _ view: View, slot: inout KeySlot, candidate: () throws -> Int64,
                              fingerprint: () -> String) rethrows -> KeyDecision {
        if let pause = view.paused, pause.refuses(at: view.now) { return .paused(pause, skipped: asked.slot != nil) }
        if let delivery = asked.delivery, let run = view.delivered {
            return .refused(.delivered(run: run, hook: delivery.hook, delivery: delivery.id))
        }
        if let found = view.slotRun {
            switch SlotBook.decide(run: found.run, ended: found.ended) {
            case .free: break
            case let .inFlight(id): return share(.joined(id), asked, view, fingerprint)
            case let .ran(id): return .shared(.slotRan(id))
            }
        }
        var window: DebounceWindow?
        if asked.action.debounce != nil {
            if let pending = view.pending {
                if let refusal = refusal(pending.run, asked, view, fingerprint) { return .refused(refusal) }
                var pushed = pending.window
                pushed.restart(at: view.now)
                return .debounced(run: pending.run, window: pushed)
            }
            window = DebounceWindow(asked.action, first: view.now)
        }
        if let success = view.lastSuccess,
           KeySlot.cools(lastSuccess: success.at, cooldown: asked.action.cooldown, forced: asked.force,
                         allowsForce: asked.action.allowsForce, now: view.now, elapsed: success.elapsed(at: view.uptime)) {
            return .shared(.cooled(success.run))
        }
        var next = view.slot
        let depth = asked.action.queueDepth
        let same = sameParams(asked, view)
        let makes = next.makesRun(policy: asked.policy, depth: depth, sameParams: same)
        if makes, let rate = view.rate, rate.limit.over == .reject,
           let at = asked.policy == .replace ? rate.nextReplacing : rate.next {
            return .rateLimited(rate.limit, next: at)
        }
        let decision = next.trigger(policy: asked.policy, candidate: makes ? try candidate() : 0, depth: depth, sameParams: same)
        switch decision {
        case .joined, .coalesced, .rejected, .cooled, .slotRan:
            return share(decision, asked, view, fingerprint)
        case .created, .followUp, .replaced:
            slot = next
            return .created(decision, window: window)
        }
    }

    /// Whether a line's entry has the asked params. An action with secret params never joins an
    /// entry by params: they hold `***` for each secret, so two different values would look equal
    /// (the secret not in the key).
    private static func sameParams(_ asked: Asked, _ view: View) -> (Int64) -> Bool {
        let secrets = !asked.action.secretParams.isEmpty
        return { run in !secrets && view.lineParams[run] == asked.params }
    }

    /// A decision that makes no run; a join or coalesce of a run made from another definition is refused.
    private static func share(_ decision: FlightTable.Decision, _ asked: Asked, _ view: View, _ fingerprint: () -> String) -> KeyDecision {
        switch decision {
        case .joined, .coalesced:
            if let refusal = refusal(decision.run, asked, view, fingerprint) { return .refused(refusal) }
        default: break
        }
        return .shared(decision)
    }

    /// Sharing `run` is refused when it was made from another definition of the action.
    private static func refusal(_ run: Int64, _ asked: Asked, _ view: View, _ fingerprint: () -> String) -> BatonError? {
        guard let theirs = view.definitions[run], theirs.fingerprint != fingerprint() else { return nil }
        return .definitionMismatch(run: run, action: asked.action.name, host: theirs.host ?? "?")
    }

    /// The detail of a new run's `queued` transition: where it came from, what it replaces or follows, its window.
    public static func queuedDetail(_ decision: FlightTable.Decision, via: String?, window: DebounceWindow?) -> TransitionDetail {
        var detail = TransitionDetail()
        detail.via = via
        if case let .replaced(_, stopping) = decision { detail.replaces = stopping; detail.reason = "replace" }
        if case let .followUp(_, after) = decision { detail.reason = "follow-up of run \(after)" }
        detail.debounce = window?.deadline.rawValue
        return detail
    }

    /// What the history records for a trigger that shares `decision`'s run; nil for one refused
    /// (nothing written) and for one that makes a run (its creation is the record).
    public var record: TriggerRecord.Decision? {
        switch self {
        case .refused, .created: nil
        case let .paused(_, skipped): skipped ? .skipped : .paused
        case .rateLimited: .rateLimited
        case .debounced: .debounced
        case let .shared(decision):
            switch decision {
            case .joined: .joined
            case .coalesced: .coalesced
            case .rejected: .rejected
            case .cooled: .cooled
            case .slotRan: .slotRan
            case .created, .followUp, .replaced: nil
            }
        }
    }
}
