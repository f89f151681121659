/// A run's definition against the config of the moment: what a run keeps of the action it was
/// triggered with, and when a reload gives up its approval wait. One rule for one machine
/// (`ConductorState.waiveApprovals`, at the `.reloaded` event) and a fleet
/// (`FleetCoordinator.waiveApprovals`) alike.
extension Action {
    /// `self` (a definition loaded from a config: what the process is) with the fields a run's
    /// definition decides by from `definition`: approve, locks, rateLimit, retry, policy, policies,
    /// queueDepth, onInterrupt, needs and hooks, debounce, maxWait and cooldown. Nothing else of
    /// `definition` is taken. A fleet takes these, and only these, from a stored row (a database
    /// writer may decide them through other tables anyway: `FleetCoordinator.lookUp`).
    public func deciding(as definition: Action) -> Action {
        var action = self
        action.approve = definition.approve
        action.locks = definition.locks
        action.rateLimit = definition.rateLimit
        action.retry = definition.retry
        action.policy = definition.policy
        action.policies = definition.policies
        action.queueDepth = definition.queueDepth
        action.onInterrupt = definition.onInterrupt
        action.needs = definition.needs
        action.hooks = definition.hooks
        action.debounce = definition.debounce
        action.maxWait = definition.maxWait
        action.cooldown = definition.cooldown
        return action
    }

    /// Whether this action as configured now gives up the approval wait of a run triggered with
    /// `definition` (which has the `approve` the run waits by): where this config is `definition`
    /// with its `approve` removed (and the `awaiting` hook that needs one), nothing else changed
    /// but what only describes it or keeps its history (`description`, `retention`).
    /// A reload that also changed what runs, or a gate (needs, locks, a rate limit, a policy),
    /// waives nothing: the run, which keeps its own definition, would start unapproved without
    /// the new gate, or run the old command; its approvers still decide it. Needs and hooks are
    /// compared by their actions' names and params (the same reload may have changed those
    /// actions too: removed their own `approve`), as a fleet's stored definition names them.
    public func waives(_ definition: Action) -> Bool {
        guard approve == nil, definition.approve != nil,
              Self.named(needs) == Self.named(definition.needs),
              Self.named(hooks, without: .awaiting) == Self.named(definition.hooks, without: .awaiting) else { return false }
        var asked = self
        asked.approve = definition.approve
        asked.needs = definition.needs
        asked.hooks = definition.hooks
        asked.description = definition.description
        asked.retention = definition.retention
        return asked == definition
    }

    private static func named(_ needs: [NeedTarget]) -> [String] {
        needs.map { named($0.action, $0.params) }
    }

    private static func named(_ hooks: HookTargets, without skipped: HookEvent) -> [String] {
        hooks.targets.filter { $0.key != skipped }.sorted { "\($0.key)" < "\($1.key)" }.map { event, target in
            "\(event)\u{0}" + named(target.action, target.params)
        } + [hooks.chain ? "chain" : ""]
    }

    /// A target as a stored definition names it: its action's name and its params, in key order.
    private static func named(_ action: Action, _ params: [String: String]) -> String {
        ([action.name] + params.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }).joined(separator: "\u{0}")
    }
}
