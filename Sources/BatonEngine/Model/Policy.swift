/// What a trigger does when its key already has a run in flight.
public enum Policy: String, Codable, Sendable, CaseIterable {
    /// Fail with `busy`, naming the run in flight (a disabled button).
    case reject
    /// Attach to the run in flight and share its outcome (Go's singleflight).
    case join
    /// Guarantee a run that starts after the trigger: at most one follow-up per key.
    case queue
    /// Cancel the run in flight and start a new one (`run-this-one`).
    case replace
}
