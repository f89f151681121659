/// An action's failures in a row (`pauseAfterFailures`) as a run's end leaves them: the one rule,
/// for a host that counts in its table (`ConductorState.countFailures`) and a fleet that counts
/// in its rows, in the transaction that writes the end (`FleetPauses.count`). The store reads
/// what it keeps (the count, the action's pause, the run, its clock), asks `end`, and writes what
/// it answers: the count to keep and the pause it made, if any.
public struct FailureStreak: Sendable, Equatable {
    /// The failures in a row to keep: zero after a success, or once they made a pause.
    public var failures: Int
    /// The pause they made (`ActionPause.afterFailures`, at the store's clock), nil for none.
    public var pause: ActionPause?

    public init(failures: Int, pause: ActionPause? = nil) {
        self.failures = failures
        self.pause = pause
    }

    /// The end of `run` with `pauseAfterFailures: most`: a success counts from zero again, a
    /// failure adds one to `failures` (the count as kept before it); the `most`th in a row makes
    /// a pause at `now` (the count then starts again), unless `pause` (the action's, as kept)
    /// holds at `now`. Any other end counts nothing: nil, nothing to write. `now` is the clock
    /// the pause's times are on (a fleet: the database's).
    public static func end(_ run: RunSnapshot, most: Int, failures: Int, pause: ActionPause?, at now: Timestamp) -> FailureStreak? {
        switch run.phase {
        case .success:
            return FailureStreak(failures: 0)
        case .failure:
            let streak = failures + 1
            let paused = pause?.holds(at: now) ?? false
            guard let made = ActionPause.afterFailures(streak: streak, most: most, last: run, paused: paused, at: now) else {
                return FailureStreak(failures: streak)
            }
            return FailureStreak(failures: 0, pause: made)
        default:
            return nil
        }
    }
}
