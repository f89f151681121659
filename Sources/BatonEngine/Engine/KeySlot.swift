/// The single-flight state of one key: the run triggers see as in flight, its follow-up, and
/// the replaced runs still stopping. `FlightTable` keeps one per key in memory; the fleet keeps
/// one per key in a PostgreSQL row that every decision about the key locks first. Both decide
/// with these two functions, so a policy means the same on one machine and across hosts.
public struct KeySlot: Sendable, Equatable {
    public var holder: Int64?
    public var followUp: Int64?
    public var draining: Set<Int64>

    public init(holder: Int64? = nil, followUp: Int64? = nil, draining: Set<Int64> = []) {
        self.holder = holder
        self.followUp = followUp
        self.draining = draining
    }

    /// Decides a trigger under `policy`; `candidate` is the id a new run would take.
    public mutating func trigger(policy: Policy, candidate: Int64) -> FlightTable.Decision {
        guard let holder else {
            self.holder = candidate
            return .created(candidate)
        }
        switch policy {
        case .reject:
            return .rejected(holder)
        case .join:
            return .joined(holder)
        case .queue:
            if let followUp { return .coalesced(followUp) }
            followUp = candidate
            return .followUp(candidate, after: holder)
        case .replace:
            let stopping = [holder] + (followUp.map { [$0] } ?? [])
            draining.formUnion(stopping)
            self.holder = candidate
            followUp = nil
            return .replaced(candidate, stopping: stopping)
        }
    }

    /// Whether a trigger under `policy` would make a run (and so needs an id for it).
    public func makesRun(policy: Policy) -> Bool {
        holder == nil || policy == .replace || (policy == .queue && followUp == nil)
    }

    /// Whether a trigger at `now` falls inside the cooldown after the key's last success (ended
    /// at `lastSuccess`), so that it runs nothing: never when the action has no cooldown, and
    /// never when the trigger is forced where the action allows it. The window is half open:
    /// a trigger exactly `cooldown` after the success runs. `elapsed`, where known, is the time
    /// since the success on a clock that does not step (the boot's); otherwise the wall clocks'
    /// difference counts, and a success the clock now puts in the future never cools: a clock
    /// stepped back must not silently skip the key for as long as it was stepped.
    public static func cools(lastSuccess: Timestamp?, cooldown: Duration?, forced: Bool, allowsForce: Bool, now: Timestamp,
                             elapsed: Duration? = nil) -> Bool {
        guard let lastSuccess, let cooldown, !(forced && allowsForce) else { return false }
        let since = elapsed ?? (now - lastSuccess)
        return since >= .zero && since < cooldown
    }

    /// A run of the key has ended: the follow-up takes the key from its holder.
    public mutating func ended(_ run: Int64) {
        if holder == run {
            holder = followUp
            followUp = nil
        } else if followUp == run {
            followUp = nil
        }
        draining.remove(run)
    }

    /// The run a debounced trigger of the key shares: the holder, else the follow-up, the first
    /// that is not being replaced and that `pending` says debounces and has not started. One
    /// machine asks its flights (`ConductorState.pendingRun`), the fleet the runs' rows
    /// (`FleetDebounce`).
    public func pendingRun(where pending: (Int64) -> Bool) -> Int64? {
        for case let id? in [holder, followUp] where !draining.contains(id) && pending(id) { return id }
        return nil
    }

    /// The run that may start now: the holder, once nothing of the key is still stopping.
    public var startable: Int64? { draining.isEmpty ? holder : nil }

    /// Whether nothing holds, follows or drains: the slot can be forgotten.
    public var isEmpty: Bool { holder == nil && followUp == nil && draining.isEmpty }
}
