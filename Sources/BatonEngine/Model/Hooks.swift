/// Which outcome of a run a hook answers (`on: { failure, success, change }`), or, for an
/// action with `approve`, a run beginning to wait for approval (`on: { awaiting }`).
public enum HookEvent: String, Codable, Sendable, CaseIterable {
    case failure, success, change, awaiting
}

/// An action's hooks (`on:`), resolved when the config is read: the action each outcome
/// triggers, with the key and params its hook run gets.
public struct HookTargets: Sendable, Equatable {
    public var targets: [HookEvent: HookTarget] = [:]
    /// Whether this action's hooks fire even when its run was itself a hook's run (`on.chain`);
    /// by default a hook fires one level deep only.
    public var chain = false

    public init(targets: [HookEvent: HookTarget] = [:], chain: Bool = false) {
        self.targets = targets
        self.chain = chain
    }

    public var isEmpty: Bool { targets.isEmpty }

    /// Whether `run`'s hooks may fire at all: a hook run's only with `on.chain` (by default a
    /// hook fires one level deep). The one rule for an end's hooks and a waiting run's, on one
    /// machine and across a fleet.
    public func fire(for run: RunSnapshot) -> Bool { fires(hookRun: run.hook != nil) }

    /// Whether the hooks of a run (a hook's run or not) may fire.
    public func fires(hookRun: Bool) -> Bool { !hookRun || chain }

    /// The hook a run fires as it begins to wait for approval (`on: { awaiting }`), or nil.
    public func awaiting(_ run: RunSnapshot) -> HookTarget? { fire(for: run) ? targets[.awaiting] : nil }

    /// The hooks a run's end fires, in `failure`, `success`, `change` order: `previous` is the
    /// last outcome of the same key (success or failure), nil when the key has none. A cancelled
    /// run fires nothing: a person or a replace decided it, not the work.
    public func fired(by phase: Phase, previous: Phase?) -> [HookEvent] {
        guard phase == .success || phase == .failure else { return [] }
        var events: [HookEvent] = []
        if phase == .failure, targets[.failure] != nil { events.append(.failure) }
        if phase == .success, targets[.success] != nil { events.append(.success) }
        if let previous, previous != phase, targets[.change] != nil { events.append(.change) }
        return events
    }
}

/// The action a hook triggers, as resolved at load: a hook run has no trigger to take params
/// from, so it gets its action's defaults (an action with a required param cannot be a hook).
public final class HookTarget: Sendable, Equatable {
    public let action: Action
    public let params: [String: String]
    public let key: String

    public init(action: Action, params: [String: String]) {
        self.action = action
        self.params = params
        self.key = action.key(for: params)
    }

    public static func == (lhs: HookTarget, rhs: HookTarget) -> Bool {
        lhs === rhs || (lhs.action == rhs.action && lhs.params == rhs.params)
    }
}

/// What made a hook run: the `event` hook of `action` run `run`. Kept on the hook run's row.
public struct HookCause: Codable, Sendable, Equatable {
    public var run: Int64
    public var action: String
    public var event: HookEvent

    public init(run: Int64, action: String, event: HookEvent) {
        self.run = run
        self.action = action
        self.event = event
    }

    /// "the failure hook of deploy run 7": the hook run's `via`.
    public var description: String { "the \(event.rawValue) hook of \(action) run \(run)" }
}

/// What a hook run is told of the run that fired it (`BATON_HOOK_*`, and its output's last 4 KiB
/// in the file `BATON_HOOK_OUTPUT` names).
public struct HookContext: Sendable, Equatable {
    public var cause: HookCause
    public var key: String
    public var phase: Phase
    public var reason: String?
    public var exitCode: Int32?
    public var error: String?
    public var params: [String: String]
    public var output: [UInt8]

    /// The most of the firing run's output a hook run is given.
    public static let outputLimit = 4_096

    public init(cause: HookCause, run: RunSnapshot, output: [UInt8]) {
        self.cause = cause
        key = run.key
        phase = run.phase
        reason = run.reason
        exitCode = run.exitCode
        error = run.error
        params = run.params
        self.output = Array(output.suffix(Self.outputLimit))
    }

    /// The variables the hook run's processes get, beside `BATON_HOOK_OUTPUT`.
    public var environment: [String: String] {
        var env = ["BATON_HOOK_RUN_ID": String(cause.run), "BATON_HOOK_ACTION": cause.action, "BATON_HOOK_KEY": key,
                   "BATON_HOOK_PHASE": phase.rawValue, "BATON_HOOK_EVENT": cause.event.rawValue,
                   "BATON_HOOK_REASON": reason ?? "", "BATON_HOOK_EXIT_CODE": exitCode.map(String.init) ?? "",
                   "BATON_HOOK_ERROR": error ?? ""]
        for (name, value) in params { env["BATON_HOOK_PARAM_" + name.uppercased()] = value }
        return env
    }
}

/// A run's end whose hooks the store decides (`Conductor.Options.storeDecidesHooks`, a fleet):
/// the run as it ended and its action's hooks, written in the item of the end. The store holds
/// the key's last outcome and the hook keys' slots, so it decides which fire (`HookTargets.fired`)
/// and what each trigger does, in the transaction that records the end.
public struct HookFiring: Sendable, Equatable {
    public var run: RunSnapshot
    public var hooks: HookTargets

    /// The firing of `run`'s end, or nil when it fires nothing whatever the previous outcome:
    /// no hooks, not a success or failure, or a hook run's end where the action has no `on.chain`.
    public init?(run: RunSnapshot, hooks: HookTargets) {
        guard !hooks.isEmpty, run.phase == .success || run.phase == .failure, hooks.fire(for: run) else { return nil }
        self.run = run
        self.hooks = hooks
    }
}
