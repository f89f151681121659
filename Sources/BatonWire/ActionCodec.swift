import BatonEngine

/// An action's definition as canonical, versioned JSON (`{"v":1,...}`), every field of `Action`
/// in one fixed order, maps and sets sorted, nil optionals left out: equal definitions are equal
/// text. A fleet stores the definition a run was triggered with by its fingerprint
/// (`definitions`, migration 0027), so that any host starts and decides the run by it
/// (`FleetCoordinator.definition`). Hooks and needs are written by their action's name and
/// params: the decoder finds those actions by name (`decode(_:resolve:)`).
public enum ActionCodec {
    /// The format's version, the `v` of every text; a decoder refuses any other.
    public static let version = 1

    /// Why a text is not a definition: the field (a dotted path) and what is wrong with it.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var field: String
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }

        public var description: String { "definition field \(field): \(message)" }
    }

    /// The canonical text of `action`.
    public static func encode(_ action: Action) -> String {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        json.key("v"); json.int(version)
        json.key("name"); json.string(action.name)
        json.key("exec"); json.strings(action.exec)
        json.field("cwd", action.cwd)
        json.key("env"); json.stringMap(action.env)
        duration("timeout", action.timeout, &json)
        duration("killGrace", action.killGrace, &json)
        json.key("leftovers"); json.string(action.leftovers.rawValue)
        json.key("policy"); json.string(action.policy.rawValue)
        json.key("policies"); json.strings(action.policies.map(\.rawValue).sorted())
        json.key("retry"); retry(action.retry, &json)
        json.key("params"); params(action.params, &json)
        json.key("keyParams"); json.strings(action.keyParams)
        json.key("onInterrupt"); json.string(action.onInterrupt.rawValue)
        json.field("description", action.description)
        if let retention = action.retention { json.key("retention"); self.retention(retention, &json) }
        if let allow = action.allow { json.key("allow"); self.allow(allow, &json) }
        if let runAs = action.runAs { json.key("runAs"); self.runAs(runAs, &json) }
        json.field("umask", action.umask)
        json.key("limits"); limits(action.limits, &json)
        duration("cooldown", action.cooldown, &json)
        duration("debounce", action.debounce, &json)
        duration("maxWait", action.maxWait, &json)
        json.key("queueDepth"); json.int(action.queueDepth)
        json.field("pauseAfterFailures", action.pauseAfterFailures)
        if let rate = action.rateLimit { json.key("rateLimit"); rateLimit(rate, &json) }
        json.key("allowsForce"); json.bool(action.allowsForce)
        json.key("locks"); locks(action.locks, &json)
        json.key("schedules"); json.strings(action.schedules)
        duration("scheduleJitter", action.scheduleJitter, &json)
        json.key("catchUp"); json.bool(action.catchUp)
        json.key("outputKeep"); json.int(action.outputKeep)
        json.field("artifactsKeep", action.artifactsKeep)
        json.key("tty"); json.bool(action.tty)
        json.key("survivesRestart"); json.bool(action.survivesRestart)
        json.key("hooks"); hooks(action.hooks, &json)
        json.key("needs"); needs(action.needs, &json)
        if let approve = action.approve { json.key("approve"); self.approve(approve, &json) }
        json.endObject()
        return json.text
    }

    /// A duration as `[seconds, attoseconds]`: exact, whatever its precision.
    static func duration(_ name: StaticString, _ value: Duration?, _ json: inout JSONWriter) {
        guard let value else { return }
        json.key(name)
        json.beginArray()
        json.int(value.components.seconds)
        json.int(value.components.attoseconds)
        json.endArray()
    }

    private static func retry(_ retry: RetryPolicy, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("attempts"); json.int(retry.attempts)
        duration("backoff", retry.backoff, &json)
        duration("maxBackoff", retry.maxBackoff, &json)
        json.endObject()
    }

    private static func params(_ params: [String: ParamSpec], _ json: inout JSONWriter) {
        json.beginObject()
        for (name, spec) in params.sorted(by: { $0.key < $1.key }) {
            json.key(name)
            json.beginObject()
            json.field("pattern", spec.pattern?.source)
            json.field("default", spec.defaultValue)
            json.key("secret"); json.bool(spec.secret)
            json.endObject()
        }
        json.endObject()
    }

    private static func retention(_ retention: Retention.Override, _ json: inout JSONWriter) {
        json.beginObject()
        duration("maxAge", retention.maxAge, &json)
        duration("keepFailures", retention.keepFailures, &json)
        json.field("maxRunsPerAction", retention.maxRunsPerAction)
        json.endObject()
    }

    private static func allow(_ allow: AccessPolicy.Override, _ json: inout JSONWriter) {
        json.beginObject()
        for (name, rule) in [("trigger", allow.trigger), ("cancel", allow.cancel), ("read", allow.read), ("pause", allow.pause)] {
            guard let rule else { continue }
            json.key(name)
            access(rule, &json)
        }
        json.endObject()
    }

    static func access(_ rule: AccessRule, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("users"); numbers(rule.users.sorted(), &json)
        json.key("groups"); numbers(rule.groups.sorted(), &json)
        json.key("everyone"); json.bool(rule.everyone)
        json.endObject()
    }

    private static func numbers(_ values: [UInt32], _ json: inout JSONWriter) {
        json.beginArray()
        for value in values { json.int(value) }
        json.endArray()
    }

    private static func runAs(_ runAs: RunAs, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("named"); json.string(runAs.named)
        json.field("groupNamed", runAs.groupNamed)
        json.key("user"); json.string(runAs.user)
        json.key("uid"); json.int(runAs.uid)
        json.key("gid"); json.int(runAs.gid)
        json.key("groups"); numbers(runAs.groups, &json)
        json.key("home"); json.string(runAs.home)
        json.key("shell"); json.string(runAs.shell)
        json.endObject()
    }

    private static func limits(_ limits: ResourceLimits, _ json: inout JSONWriter) {
        json.beginObject()
        json.field("memory", limits.memory)
        json.field("tasks", limits.tasks)
        json.field("cpu", limits.cpu)
        json.endObject()
    }

    private static func rateLimit(_ rate: RateLimit, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("runs"); json.int(rate.runs)
        duration("per", rate.per, &json)
        json.key("scope"); json.string(rate.scope.rawValue)
        json.key("over"); json.string(rate.over.rawValue)
        json.endObject()
    }

    private static func locks(_ locks: [LockClaim], _ json: inout JSONWriter) {
        json.beginArray()
        for lock in locks {
            json.beginObject()
            json.key("name"); json.string(lock.name)
            json.key("limit"); json.int(lock.limit)
            json.endObject()
        }
        json.endArray()
    }

    /// A hook's or a need's target: its action by name, and its params.
    private static func target(_ action: Action, _ params: [String: String], _ json: inout JSONWriter) {
        json.beginObject()
        json.key("action"); json.string(action.name)
        json.key("params"); json.stringMap(params)
        json.endObject()
    }

    private static func hooks(_ hooks: HookTargets, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("chain"); json.bool(hooks.chain)
        json.key("targets")
        json.beginObject()
        for (event, target) in hooks.targets.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            json.key(event.rawValue)
            self.target(target.action, target.params, &json)
        }
        json.endObject()
        json.endObject()
    }

    private static func needs(_ needs: [NeedTarget], _ json: inout JSONWriter) {
        json.beginArray()
        for need in needs { target(need.action, need.params, &json) }
        json.endArray()
    }

    private static func approve(_ approve: ApprovalRule, _ json: inout JSONWriter) {
        json.beginObject()
        json.key("by"); json.strings(approve.by)
        json.key("approvers"); access(approve.approvers, &json)
        duration("timeout", approve.timeout, &json)
        json.key("allowsSelf"); json.bool(approve.allowsSelf)
        json.endObject()
    }
}
