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
    /// Follows a run's output live from `offset` (as `Conductor.followOutput`: `ready` is told the
    /// position live chunks start from, every byte before it readable in the history, or nil when
    /// the run is not followed live; then `follower` gets each chunk, and nil after the run's end).
    /// Returns the id to stop following with.
    func followOutput(_ run: RunSnapshot, from offset: Int64, _ follower: @escaping Conductor.OutputFollower,
                      ready: @escaping @Sendable (Int64?) -> Void) -> Int
    /// Stops a follower of output (its client went).
    func stopFollowingOutput(_ id: Int)
    /// Brings the conductor's pauses up to date with the store's, then calls `then` (with why
    /// not, when the store could not be read), so that a pause or resume sent after is decided
    /// on them: at once on one machine; a fleet reads its database's first (a pause made on
    /// another host a moment ago is resumed, not answered "not paused").
    func readPauses(then: @escaping @Sendable (BatonError?) -> Void)
    /// Approves or denies a run waiting for approval (`baton approve`, `baton deny`), decided
    /// once: answered with the run as the decision left it, or refused (`forbidden`, `notWaiting`,
    /// `unknownRun`). A fleet decides in its database, for a run of any host. `mayRead`: whether
    /// the caller may read an action; a run of one it may not is `unknownRun`, before any rule
    /// (a fleet's run not yet seen by this host's feed is checked on its row).
    func decide(run: Int64, by approver: Approver, approve: Bool, reason: String?, mayRead: @escaping @Sendable (String) -> Bool,
                answered: @escaping @Sendable (Result<RunSnapshot, BatonError>) -> Void)
    /// The runs waiting for `approver`'s yes now, oldest first (a fleet's: every host's), or why
    /// they could not be read (`storeUnavailable`).
    func awaitingApproval(by approver: Approver, answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void)
}

extension Conductor: RunDispatcher {
    /// One machine's runs are followed in the conductor, whatever the offset (the history has the rest).
    public func followOutput(_ run: RunSnapshot, from offset: Int64, _ follower: @escaping Conductor.OutputFollower,
                             ready: @escaping @Sendable (Int64?) -> Void) -> Int {
        followOutput(run: run.id, follower, ready: ready)
    }

    /// One machine's pauses are the conductor's own.
    public func readPauses(then: @escaping @Sendable (BatonError?) -> Void) { then(nil) }

    /// One machine's waits are the conductor's own.
    public func awaitingApproval(by approver: Approver, answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void) {
        answered(.success(awaitingApproval(by: approver)))
    }

    /// One machine's runs in flight are all known: the service checks read on its snapshot first.
    public func decide(run: Int64, by approver: Approver, approve: Bool, reason: String?, mayRead: @escaping @Sendable (String) -> Bool,
                       answered: @escaping @Sendable (Result<RunSnapshot, BatonError>) -> Void) {
        if let live = snapshot(of: run), !mayRead(live.action) { return answered(.failure(.unknownRun(run))) }
        decide(run: run, by: approver, approve: approve, reason: reason, answered: answered)
    }
}
