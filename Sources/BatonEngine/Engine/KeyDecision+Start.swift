/// Whether a queued run may start now: one rule for a host's conductor (`FlightTable`, as it
/// promotes a key's run to ready) and for every start path of a fleet (the fleet decodes its
/// rows into a `KeyDecision.Starts.Row`, `StartColumns`, whose `view(me:)` builds the
/// `StartView`). The store reads the facts; the rule is here.
extension KeyDecision {
    /// What a run's start is decided on, as its store knows it now.
    public struct StartView: Sendable, Equatable {
        /// Whether its needs are met (`needs`): none, or all of them succeeded.
        public enum Needs: Sendable, Equatable {
            case met
            /// Still asked, or waiting for the runs it needs.
            case waiting
            /// One failed: the run ends, never started.
            case failed
        }

        public var run: Int64
        public var phase: Phase
        /// Its key's slot: the run starts only as its `startable` run (the holder, nothing draining).
        public var slot: KeySlot
        /// Its debounce window, if it has one, has passed (on a fleet: and it is this host's run).
        public var windowPassed: Bool
        /// Its action's pause holds now (`ActionPause.holds(at:)`).
        public var paused: Bool
        /// Its rate limit holds it back now (a `rate_until` to come, `rateUntil`).
        public var rateHeld: Bool
        /// It waits for an approver's yes (its approval undecided).
        public var approving: Bool
        public var needs: Needs

        public init(run: Int64, phase: Phase = .queued, slot: KeySlot, windowPassed: Bool = true, paused: Bool = false,
                    rateHeld: Bool = false, approving: Bool = false, needs: Needs = .met) {
            self.run = run
            self.phase = phase
            self.slot = slot
            self.windowPassed = windowPassed
            self.paused = paused
            self.rateHeld = rateHeld
            self.approving = approving
            self.needs = needs
        }
    }

    /// What `mayStart` says of a run.
    public enum StartVerdict: Sendable, Equatable {
        case start
        /// Not now: it stays queued until what holds it back goes.
        case wait(StartWait)
        /// Never: it is no longer queued, or it must end without starting.
        case end(StartEnd)
    }

    /// Why a run waits, the first that holds in this order.
    public enum StartWait: String, Sendable, Equatable {
        /// Another run of its key holds it, or a replaced run still drains.
        case key
        case paused
        case approval
        case needs
        case window
        case rate
    }

    public enum StartEnd: String, Sendable, Equatable {
        /// It left `queued` (started, or ended) before this decision.
        case notQueued
        /// A run it needs failed.
        case needFailed
    }

    /// The rule: a queued run starts when it is its key's startable run (`KeySlot.startable`),
    /// its action is not paused, it does not wait for its approval nor its needs, its window
    /// has passed and its rate limit does not hold it back.
    public static func mayStart(_ view: StartView) -> StartVerdict {
        guard view.phase == .queued else { return .end(.notQueued) }
        if view.needs == .failed { return .end(.needFailed) }
        if view.slot.startable != view.run { return .wait(.key) }
        if view.paused { return .wait(.paused) }
        if view.approving { return .wait(.approval) }
        if view.needs == .waiting { return .wait(.needs) }
        if !view.windowPassed { return .wait(.window) }
        if view.rateHeld { return .wait(.rate) }
        return .start
    }
}

extension KeyDecision.StartView {
    /// A run a trigger has just made, as its key was left (`slot`): queued, waiting for its
    /// approval if its action asks one, for its needs if it has any (asked after it is made),
    /// for its `window` while one is open; `paused` and `rateHeld` as its store read them.
    public static func newRun(_ run: Int64, of action: Action, slot: KeySlot, window: DebounceWindow?, paused: Bool,
                              rateHeld: Bool) -> Self {
        Self(run: run, slot: slot, windowPassed: window == nil, paused: paused, rateHeld: rateHeld,
                  approving: action.approve != nil, needs: action.needs.isEmpty ? .met : .waiting)
    }
}

extension KeyDecision {
    /// Whether a run a store's transaction has just made starts in it, and its start counted: the
    /// start rule (`mayStart` on `StartView.newRun`) with its action's `pause` as it holds at `now`,
    /// asked through its bucket's hold-then-count (`RateBucket.admit`, `RateBook.admit`: a run its
    /// rate limit holds back does not start; one let start counts in its bucket for the runs
    /// asked after it). A bucket's hold is not kept here: the run's start path holds it again.
    public static func admitStart(_ run: Int64, of action: Action, key: String, slot: KeySlot, window: DebounceWindow?,
                                  pause: ActionPause?, buckets: inout [String: RateBucket], at now: Timestamp) -> Bool {
        let view = StartView.newRun(run, of: action, slot: slot, window: window, paused: pause?.holds(at: now) ?? false, rateHeld: false)
        let starts = { mayStart(view) == .start }
        guard let claim = action.rateClaim(key: key), buckets[claim.bucket] != nil else { return starts() }
        return buckets[claim.bucket]!.admit(run, claim, at: now, keepsHold: false, starts: starts) == .started
    }
}
