import BatonCore

extension BatonQuery where Value == ActionPause? {
    /// Pauses `action` (for `duration`, else until resumed), saying why: the pause made. With
    /// `hold`, its triggers are queued while it lasts (and start when it ends) instead of refused.
    public static func pause(_ action: String, reason: String, for duration: Duration? = nil, hold: Bool = false) -> Self {
        Self(Request(op: .pause, action: action, reason: reason, duration: duration?.microseconds, hold: hold ? true : nil)) { $0.pause }
    }

    /// Ends `action`'s pause: the pause ended, nil when it was not paused.
    public static func resume(_ action: String) -> Self {
        Self(Request(op: .resume, action: action)) { $0.pause }
    }
}
