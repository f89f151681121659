import BatonCore

/// How a run ended, as the trigger's final answer says it.
public struct RunOutcome: Sendable, Equatable {
    /// The run at its end (or, for a detached trigger, once it is durably queued).
    public var run: RunSnapshot
    /// What the trigger did: created a run, joined one, became or joined a follow-up, replaced one.
    public var decision: TriggerDecision?
    /// True when another trigger created the run and this caller shares its outcome.
    public var shared: Bool
    /// The action's cooldown in microseconds, when the decision is `cooled` (the run is its last success).
    public var cooldown: Int64?
    /// The runs this trigger's run replaced (they end cancelled), when the decision is `replaced`.
    public var replaced: [Int64]

    public init(run: RunSnapshot, decision: TriggerDecision?, shared: Bool, cooldown: Int64? = nil, replaced: [Int64] = []) {
        self.run = run
        self.decision = decision
        self.shared = shared
        self.cooldown = cooldown
        self.replaced = replaced
    }

    /// The run's phase: `success`, `failure` or `cancelled` once it ended.
    public var phase: Phase { run.phase }

    /// The outcome a trigger's final answer carries; throws `.internal` when it carries no run.
    init(_ response: Response) throws(BatonClientError) {
        guard let run = response.run else { throw .internal("batond answered a trigger without its run") }
        self.init(run: run, decision: response.decision, shared: response.shared ?? false, cooldown: response.cooldown,
                  replaced: response.replaced ?? [])
    }
}
