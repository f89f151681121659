/// The runs that scheduled slots made, per action and slot: a trigger of a slot that already has
/// a run joins it while it is in flight, and runs nothing once it has ended, whatever the policy.
/// The fleet decides the same with `SlotBook.decide` over the run its database has for the slot.
///
/// Invariant: at most one run per action and slot is ever created (the walk and the stores'
/// unique index on action and slot both check it); the newest `kept` slots of each action are
/// remembered, older ones are forgotten (a slot that old is not fired again by a timer).
public struct SlotBook: Sendable {
    /// One firing of an action's schedule.
    public struct Slot: Hashable, Sendable {
        public var action: String
        public var at: Timestamp
        public init(action: String, at: Timestamp) {
            self.action = action
            self.at = at
        }
    }

    /// What a scheduled trigger finds for its slot.
    public enum Finding: Sendable, Equatable {
        /// No run has the slot: the trigger is decided like any other, by the key and policy.
        case free
        /// The slot's run is in flight: the trigger joins it.
        case inFlight(Int64)
        /// The slot's run has ended: nothing runs ("scheduled slot already ran").
        case ran(Int64)
    }

    /// How many slots of each action are remembered.
    public static let kept = 256

    private var runs: [Slot: RunSnapshot] = [:]
    private var byAction: [String: [Timestamp]] = [:]

    public init() {}

    /// The decision for a slot whose run is `run` (nil when none), ended or not.
    public static func decide(run: Int64?, ended: Bool) -> Finding {
        guard let run else { return .free }
        return ended ? .ran(run) : .inFlight(run)
    }

    /// The run recorded for a slot, as last told.
    public func run(for slot: Slot) -> RunSnapshot? { runs[slot] }

    /// Records a run with a slot (at its creation, at its end, or from the history); a run of a
    /// slot already held by another run is ignored: the first one keeps it.
    public mutating func record(_ run: RunSnapshot) {
        guard let at = run.slot else { return }
        let slot = Slot(action: run.action, at: at)
        if let known = runs[slot] {
            if known.id == run.id { runs[slot] = run }
            return
        }
        runs[slot] = run
        var times = byAction[run.action, default: []]
        times.append(at)
        if times.count > Self.kept {
            times.sort()
            for old in times.prefix(times.count - Self.kept) { runs[Slot(action: run.action, at: old)] = nil }
            times.removeFirst(times.count - Self.kept)
        }
        byAction[run.action] = times
    }

    /// Forgets a run whose creation could not be written: its slot is free again.
    public mutating func forget(_ run: RunSnapshot) {
        guard let at = run.slot, runs[Slot(action: run.action, at: at)]?.id == run.id else { return }
        runs[Slot(action: run.action, at: at)] = nil
        byAction[run.action]?.removeAll { $0 == at }
    }

    /// How many slots are remembered, over every action.
    public var count: Int { runs.count }
}
