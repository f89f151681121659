/// What a store knows of one key when a trigger of it is decided, as a value: the fleet fills it
/// from the rows it holds, a host from its flights (`ConductorState.keyFacts`); the engine makes
/// its `KeyDecision.View` of it (`KeyDecision.view(_:)`) and decides. So the view's
/// assembly (the schedule slot's run and whether it ended, the pending debounced run, the line's
/// params, the definitions) is written once, here, for both.
public struct KeyFacts: Sendable, Equatable {
    /// What the store knows of one run of the key: one its triggers may share, stop or compare
    /// definitions with.
    public struct Run: Sendable, Equatable {
        public var phase: Phase
        /// Its last transition's seq (a stop writes the next): always read with the run (a store
        /// that cannot read it fails the read rather than guess).
        public var lastSeq: Int
        /// Who runs it (a fleet host's incarnation): a stop of a run with an attempt is its owner's.
        public var owner: String?
        /// The definition (`Action.fingerprint`) it was made from, and the host that made it.
        public var definition: String?
        public var host: String?
        /// Its params: a line longer than one is joined by a trigger with a waiting entry's params.
        public var params: [String: String]

        public init(phase: Phase, lastSeq: Int, owner: String? = nil, definition: String? = nil, host: String? = nil,
                    params: [String: String] = [:]) {
            self.phase = phase
            self.lastSeq = lastSeq
            self.owner = owner
            self.definition = definition
            self.host = host
            self.params = params
        }
    }

    /// The key's holder, line and draining runs.
    public var slot: KeySlot
    /// The clock the windows and the cooldown are measured on (a fleet: the database's).
    public var now: Timestamp
    /// The boot's clock (which never steps), where the store reads it: a cooldown is measured on it.
    public var uptime: Duration?
    /// The runs the store read, by id: those it has (a host: its flights among the line's, the
    /// schedule slot's and the debounced runs'; a fleet: the rows it read). A run not here is
    /// unread, not absent (`KeyDecision.view` says what it takes an unread run for).
    public var runs: [Int64: Run]
    /// The windows of the key's debounced runs not yet started, as kept.
    public var windows: [Int64: DebounceWindow]
    /// The run the trigger's delivery already made or joined.
    public var delivered: Int64?
    /// The run the trigger's schedule slot already has.
    public var slotRun: Int64?
    /// The key's last success.
    public var lastSuccess: KeyDecision.LastSuccess?
    /// The action's pause, whether or not it holds at `now`.
    public var pause: ActionPause?
    /// The action's rate limit and when a new run of the key could start under it, as the
    /// engine's rule answers from the store's book (`FlightTable.rate`, `RateBucket.rate`).
    public var rate: KeyDecision.Rate?

    public init(slot: KeySlot, now: Timestamp, runs: [Int64: Run] = [:], windows: [Int64: DebounceWindow] = [:],
                delivered: Int64? = nil, slotRun: Int64? = nil, lastSuccess: KeyDecision.LastSuccess? = nil, pause: ActionPause? = nil,
                rate: KeyDecision.Rate? = nil) {
        self.slot = slot
        self.now = now
        self.runs = runs
        self.windows = windows
        self.delivered = delivered
        self.slotRun = slotRun
        self.lastSuccess = lastSuccess
        self.pause = pause
        self.rate = rate
    }
}

extension KeyDecision {
    /// The engine's view of a key from its facts, as a store read them. One rule for a run not
    /// in `facts.runs` (unread): a schedule slot's unread run has ended; an unread run with a
    /// window kept (`facts.windows`) has not started, so it may be the pending one (the rule's
    /// `pending(in:windows:started:)`; a run read as no longer queued never is); an unread line
    /// entry has no params (a trigger never joins it by params) and no definition.
    public static func view(_ facts: KeyFacts) -> View {
        var view = View(slot: facts.slot, now: facts.now, delivered: facts.delivered, lastSuccess: facts.lastSuccess)
        view.uptime = facts.uptime
        let runs = facts.runs
        view.slotRun = facts.slotRun.map { SlotRun(run: $0, ended: runs[$0]?.phase.isTerminal ?? true) }
        view.pending = pending(in: facts.slot, windows: facts.windows, started: { runs[$0].map { $0.phase != .queued } ?? false })
        // The pause as the store kept it: whether it holds is decided here, on the facts' clock,
        // for a host's triggers and hooks and a fleet's alike (`ActionPause.holds(at:)`).
        view.paused = facts.pause.flatMap { $0.holds(at: facts.now) ? $0 : nil }
        view.rate = facts.rate
        for id in facts.slot.line { view.lineParams[id] = runs[id]?.params }
        for (id, run) in runs {
            if let definition = run.definition { view.definitions[id] = Definition(fingerprint: definition, host: run.host) }
        }
        return view
    }

    /// Decides `asked` on what the store knows of its key (`view`, then `decide`): `candidate` is
    /// asked for a new run's id only when the decision makes one, and may throw (a fleet's hook
    /// takes it from the database); `fingerprint` is the asked action's, where the store keeps it.
    public static func decide(_ asked: Asked, _ facts: KeyFacts, slot: inout KeySlot, candidate: () throws -> Int64,
                              fingerprint: () -> String) rethrows -> KeyDecision {
        try decide(asked, view(facts), slot: &slot, candidate: candidate, fingerprint: fingerprint)
    }

    /// The same, with the asked action's own fingerprint.
    public static func decide(_ asked: Asked, _ facts: KeyFacts, slot: inout KeySlot, candidate: () throws -> Int64) rethrows -> KeyDecision {
        try decide(asked, view(facts), slot: &slot, candidate: candidate, fingerprint: { asked.action.fingerprint })
    }
}
