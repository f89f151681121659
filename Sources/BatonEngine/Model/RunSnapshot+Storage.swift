extension RunSnapshot {
    /// A snapshot's fields, behind one reference, never changed: a change makes a new storage
    /// (`RunSnapshot`'s setters), so a storage two values share, on one thread or several, is
    /// only read, and the class is `Sendable` as the compiler checks it (issue 39, item 3: it
    /// was `@unchecked`, written in place when its value was its only holder).
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The stored fields, in the order (and with the `Codable` keys) of the public properties, with
    /// their names and meaning: what `update` hands its body to change several at once.
    @usableFromInline package struct Fields: Codable, Equatable, Sendable {
        @usableFromInline package var id: Int64
        @usableFromInline package var action: String
        @usableFromInline package var key: String
        @usableFromInline package var phase: Phase
        @usableFromInline package var policy: Policy
        @usableFromInline package var params: [String: String]
        @usableFromInline package var trigger: Peer?
        @usableFromInline package var queuedAt: Timestamp
        @usableFromInline package var startedAt: Timestamp?
        @usableFromInline package var endedAt: Timestamp?
        @usableFromInline package var attempts: Int
        @usableFromInline package var exitCode: Int32?
        @usableFromInline package var signal: Int32?
        @usableFromInline package var reason: String?
        @usableFromInline package var error: String?
        @usableFromInline package var cancelledBy: UInt32?
        @usableFromInline package var progress: Progress?
        @usableFromInline package var estimate: Int64?
        @usableFromInline package var host: String?
        @usableFromInline package var seq: Int?
        @usableFromInline package var cpuUser: Int64?
        @usableFromInline package var cpuSystem: Int64?
        @usableFromInline package var memoryPeak: Int64?
        @usableFromInline package var via: String?
        @usableFromInline package var slot: Timestamp?
        @usableFromInline package var hook: HookCause?
        @usableFromInline package var waiting: LockWait?
        @usableFromInline package var debounceUntil: Timestamp?
        @usableFromInline package var rateUntil: Timestamp?
        @usableFromInline package var coolsUntil: Timestamp?
        @usableFromInline package var line: Int?
        @usableFromInline package var needs: [NeededRun]?
        @usableFromInline package var neededBy: [NeededRun]?
        @usableFromInline package var approval: ApprovalState?

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
