import BatonEngine
/// What a reactor measures its deadlines on. batond's is `SystemClock`; a test's is one it
/// advances itself, waking the reactor (`post`) after each step so that the timers due run.
public protocol ReactorClock: Sendable {
    /// The time now.
    var now: ContinuousClock.Instant { get }
    /// Whether time passes by itself, so that the loop sleeps until the next deadline; a test's
    /// clock does not (the loop waits for events and posted work only).
    var advancesByItself: Bool { get }
}

/// The monotonic clock (`ContinuousClock`): batond's.
public struct SystemClock: ReactorClock {
    public init() {}
    public var now: ContinuousClock.Instant { .now }
    public var advancesByItself: Bool { true }
}
