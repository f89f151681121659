extension KeyDecision {
    /// Recovery's decision for run `run` of `action`, which a previous daemon left queued, taken
    /// back in the order the runs were queued: the decision of a live `queue` trigger of the key
    /// (`decide`), the run's own id its candidate, on the key's slot alone (recovery deals with
    /// pauses and windows itself; a cooldown does not stop a run already made) and joining no entry
    /// by params. So it holds the key if nothing does (`created`), else waits at the end of the
    /// line while the line has room (`followUp`); where a live trigger would share a run (the line
    /// full: coalesced or rejected), the run is superseded: nil, and `slot` is as it was.
    public static func recover(_ run: Int64, of action: Action, slot: inout KeySlot, at now: Timestamp) -> FlightTable.Decision? {
        let decided = decide(Asked(action: action, policy: .queue), View(slot: slot, now: now), slot: &slot, candidate: { run })
        guard case let .created(decision, _) = decided else { return nil }
        return decision
    }
}
