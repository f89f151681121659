import BatonCore

extension BatonQuery where Value == ActionPause? {
    /// Pauses `action` (for `duration`, else until resumed), saying why: the pause made.
    public static func pause(_ action: String, reason: String, for duration: Duration? = nil) -> Self {
        Self(Request(op: .pause, action: action, reason: reason, duration: duration?.microseconds)) { $0.pause }
    }

    /// Ends `action`'s pause: the pause ended, nil when it was not paused.
    public static func resume(_ action: String) -> Self {
        Self(Request(op: .resume, action: action)) { $0.pause }
    }
}
