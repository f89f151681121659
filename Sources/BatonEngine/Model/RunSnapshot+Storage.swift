extension RunSnapshot {
    /// A snapshot's fields, behind one reference, never changed: a change makes a new storage
    /// (`RunSnapshot`'s setters), so a storage two values share, on one thread or several, is
    /// only read, and the class is `Sendable` as the compiler checks it (issue 39, item 3: it
    /// was `@unchecked`, written in place when its value was its only holder).
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The stored fields, in the order (and with the `Codable` keys) of the public properties.
    @usableFromInline struct Fields: Codable, Equatable, Sendable {
        @usableFromInline var id: Int64
        @usableFromInline var action: String
        @usableFromInline var key: String
        @usableFromInline var phase: Phase
        @usableFromInline var policy: Policy
        @usableFromInline var params: [String: String]
        @usableFromInline var trigger: Peer?
        @usableFromInline var queuedAt: Timestamp
        @usableFromInline var startedAt: Timestamp?
        @usableFromInline var endedAt: Timestamp?
        @usableFromInline var attempts: Int
        @usableFromInline var exitCode: Int32?
        @usableFromInline var signal: Int32?
        @usableFromInline var reason: String?
        @usableFromInline var error: String?
        @usableFromInline var cancelledBy: UInt32?
        @usableFromInline var progress: Progress?
        @usableFromInline var estimate: Int64?
        @usableFromInline var host: String?
        @usableFromInline var seq: Int?
        @usableFromInline var cpuUser: Int64?
        @usableFromInline var cpuSystem: Int64?
        @usableFromInline var memoryPeak: Int64?
        @usableFromInline var via: String?
        @usableFromInline var slot: Timestamp?
        @usableFromInline var hook: HookCause?
        @usableFromInline var waiting: LockWait?
        @usableFromInline var debounceUntil: Timestamp?
        @usableFromInline var rateUntil: Timestamp?
        @usableFromInline var coolsUntil: Timestamp?
        @usableFromInline var line: Int?
        @usableFromInline var needs: [NeededRun]?
        @usableFromInline var neededBy: [NeededRun]?
        @usableFromInline var approval: ApprovalState?

        init(
            id: Int64, action: String, key: String, phase: Phase, policy: Policy, params: [String: String],
            trigger: Peer?, queuedAt: Timestamp, startedAt: Timestamp?, endedAt: Timestamp?, attempts: Int,
            exitCode: Int32?, signal: Int32?, reason: String?, error: String?, progress: Progress?, estimate: Int64?
        ) {
            self.id = id
            self.action = action
            self.key = key
            self.phase = phase
            self.policy = policy
            self.params = params
            self.trigger = trigger
            self.queuedAt = queuedAt
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.attempts = attempts
            self.exitCode = exitCode
            self.signal = signal
            self.reason = reason
            self.error = error
            self.progress = progress
            self.estimate = estimate
        }
    }
}
