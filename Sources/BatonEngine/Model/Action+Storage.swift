extension Action {
    /// An action's fields, behind one reference, never changed: a change makes a new storage
    /// (`Action`'s setters), so a storage two values share, on one thread or several, is only
    /// read, and the class is `Sendable` as the compiler checks it.
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The stored fields, in the order of the public properties, with their names and meaning
    /// (and the defaults of those that `init` does not take).
    @usableFromInline package struct Fields: Equatable, Sendable {
        @usableFromInline package var name: String
        @usableFromInline package var exec: [String]
        @usableFromInline package var cwd: String?
        @usableFromInline package var env: [String: String]
        @usableFromInline package var timeout: Duration?
        @usableFromInline package var killGrace: Duration
        @usableFromInline package var leftovers: Leftovers = .kill
        @usableFromInline package var policy: Policy
        @usableFromInline package var policies: Set<Policy>
        @usableFromInline package var retry: RetryPolicy
        @usableFromInline package var params: [String: ParamSpec]
        @usableFromInline package var keyParams: [String]
        @usableFromInline package var onInterrupt: InterruptPolicy
        @usableFromInline package var description: String?
        @usableFromInline package var retention: Retention.Override?
        @usableFromInline package var allow: AccessPolicy.Override?
        @usableFromInline package var runAs: RunAs?
        @usableFromInline package var umask: UInt32?
        @usableFromInline package var limits: ResourceLimits = ResourceLimits()
        @usableFromInline package var cooldown: Duration?
        @usableFromInline package var debounce: Duration?
        @usableFromInline package var maxWait: Duration?
        @usableFromInline package var queueDepth: Int = 1
        @usableFromInline package var pauseAfterFailures: Int?
        @usableFromInline package var rateLimit: RateLimit?
        @usableFromInline package var allowsForce: Bool = false
        @usableFromInline package var locks: [LockClaim] = []
        @usableFromInline package var schedules: [String] = []
        @usableFromInline package var scheduleJitter: Duration?
        @usableFromInline package var catchUp: Bool = false
        @usableFromInline package var outputKeep: Int64 = Action.defaultOutputKeep
        @usableFromInline package var artifactsKeep: Int64?
        @usableFromInline package var tty: Bool = false
        @usableFromInline package var survivesRestart: Bool = true
        @usableFromInline package var hooks: HookTargets = HookTargets()
        @usableFromInline package var needs: [NeedTarget] = []
        @usableFromInline package var approve: ApprovalRule?

        init(
            name: String, exec: [String], cwd: String?, env: [String: String], timeout: Duration?, killGrace: Duration,
            policy: Policy, policies: Set<Policy>, retry: RetryPolicy, params: [String: ParamSpec], keyParams: [String],
            onInterrupt: InterruptPolicy, description: String?
        ) {
            self.name = name
            self.exec = exec
            self.cwd = cwd
            self.env = env
            self.timeout = timeout
            self.killGrace = killGrace
            self.policy = policy
            self.policies = policies
            self.retry = retry
            self.params = params
            self.keyParams = keyParams
            self.onInterrupt = onInterrupt
            self.description = description
        }
    }
}
