import BatonCore

extension FleetCoordinator {
    /// A run this host's conductor runs is followed there; any other (another host's, or one of
    /// this host's still queued) through the fleet's database, from `offset`.
    public func followOutput(_ run: RunSnapshot, from offset: Int64, _ follower: @escaping Conductor.OutputFollower,
                             ready: @escaping @Sendable (Int64?) -> Void) -> Int {
        if runsHere(run.id) {
            return conductor.followOutput(run: run.id, follower, ready: ready)
        }
        let id = remoteOutput.add(run: run.id, from: offset, follower)
        // Live chunks start at the offset: the relay reads no history before them.
        ready(offset)
        return id
    }

    public func stopFollowingOutput(_ id: Int) {
        if id < 0 { remoteOutput.remove(id) } else { conductor.stopFollowingOutput(id) }
    }
}
