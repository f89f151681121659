/// Where the service sends the requests that act on runs: the conductor on one machine, the
/// fleet's coordinator when several batonds share a PostgreSQL database. Answers come on
/// whichever thread learns them; none of these waits.
public protocol RunDispatcher: Sendable {
    /// Decides a trigger (create, join, queue, replace or reject), answered once durable; then
    /// `follower`, if given, gets the run's updates until its end.
    func trigger(_ trigger: Trigger, follower: Conductor.Follower?,
                 answered: @escaping @Sendable (Result<(FlightTable.Decision, RunSnapshot), BatonError>) -> Void)
    /// Cancels runs in flight; answered with those it stopped, as they are now.
    func cancel(_ target: ConductorState.CancelTarget, by peer: Peer?,
                answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void)
    /// Follows a run in flight: answered with it (nil when it is not in flight), then its updates.
    func attach(_ id: Int64, follower: @escaping Conductor.Follower, answered: @escaping @Sendable (RunSnapshot?) -> Void)
    /// A run in flight, as known now; nil when it is not in flight.
    func snapshot(of id: Int64) -> RunSnapshot?
    /// The runs in flight, oldest first.
    func inFlight() -> [RunSnapshot]
}

extension Conductor: RunDispatcher {}
