/// The quiet window of a debounced run as a value: the run starts once no trigger of its key has
/// come for `window`, or `maxWait` after the burst's first trigger, whichever is first.
///
/// Invariant: `deadline` only moves later, and never beyond `first + maxWait`.
public struct DebounceWindow: Sendable, Equatable {
    /// How long the key must be quiet.
    public var window: Duration
    /// The longest the run waits after the burst's first trigger.
    public var maxWait: Duration
    /// When the burst's first trigger came (the run's creation, or its recovery).
    public var first: Timestamp
    /// When the run may start.
    public private(set) var deadline: Timestamp

    /// The window a burst's first trigger at `now` opens.
    public init(window: Duration, maxWait: Duration, first: Timestamp) {
        self.window = window
        self.maxWait = maxWait
        self.first = first
        deadline = first + min(window, maxWait)
    }

    /// A window as it was kept (a fleet's run row): its deadline as last pushed back, never
    /// before the first trigger's window nor beyond `maxWait` after it.
    public init(window: Duration, maxWait: Duration, first: Timestamp, deadline: Timestamp) {
        self.init(window: window, maxWait: maxWait, first: first)
        self.deadline = min(max(deadline, self.deadline), first + maxWait)
    }

    /// The window of an action's run whose burst began at `first`; nil when it does not debounce.
    public init?(_ action: Action, first: Timestamp) {
        guard let window = action.debounce, let maxWait = action.debounceMaxWait else { return nil }
        self.init(window: window, maxWait: maxWait, first: first)
    }

    /// A further trigger at `now` restarts the window, as far as `maxWait` allows.
    public mutating func restart(at now: Timestamp) {
        deadline = max(deadline, min(now + window, first + maxWait))
    }

    /// Whether the run must still wait at `now` (its deadline not `passed`).
    public func isOpen(at now: Timestamp) -> Bool { !Self.passed(deadline: deadline, at: now) }

    /// Whether a window whose deadline was kept as `deadline` (nil: none) has passed at `now`: a
    /// store that keeps the deadline alone (a fleet's run row) asks the window's rule with it.
    public static func passed(deadline: Timestamp?, at now: Timestamp) -> Bool {
        guard let deadline else { return true }
        return now >= deadline
    }

    /// How long a window whose deadline was kept as `deadline` has left at `now`; nil once it `passed`.
    public static func left(deadline: Timestamp, at now: Timestamp) -> Duration? {
        passed(deadline: deadline, at: now) ? nil : deadline - now
    }
}
