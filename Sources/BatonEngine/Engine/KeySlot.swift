/// The single-flight state of one key: the run triggers see as in flight, the line of follow-ups
/// waiting behind it (first in, first out), and the replaced runs still stopping. `FlightTable`
/// keeps one per key in memory; the fleet keeps one per key in a PostgreSQL row that every
/// decision about the key locks first. Both decide with these functions, so a policy means the
/// same on one machine and across hosts.
public struct KeySlot: Sendable, Equatable {
    public var holder: Int64?
    /// The follow-ups (`queue`), in the order they start: the first takes the key when the holder ends.
    public var line: [Int64]
    public var draining: Set<Int64>

    public init(holder: Int64? = nil, line: [Int64] = [], draining: Set<Int64> = []) {
        self.holder = holder
        self.line = line
        self.draining = draining
    }

    /// A slot with at most one follow-up (a line of one).
    public init(holder: Int64?, followUp: Int64?, draining: Set<Int64> = []) {
        self.init(holder: holder, line: followUp.map { [$0] } ?? [], draining: draining)
    }

    /// The first follow-up: the run that takes the key when its holder ends.
    public var followUp: Int64? { line.first }

    /// What a `queue` trigger does with the line, `depth` long at most: a line of one (the
    /// default) keeps `queue`'s first promise, a run that starts after the trigger, so any trigger
    /// joins the one follow-up waiting; a longer line is joined only by a trigger whose params equal
    /// a waiting entry's (`sameParams`), gets a new entry while there is room, and is refused beyond.
    public enum Queueing: Sendable, Equatable {
        case join(Int64), append, full
    }

    public func queueing(depth: Int, sameParams: (Int64) -> Bool) -> Queueing {
        if depth <= 1, let first = line.first { return .join(first) }
        if let same = line.first(where: sameParams) { return .join(same) }
        return line.count < max(depth, 1) ? .append : .full
    }

    /// Decides a trigger under `policy`; `candidate` is the id a new run would take. A `queue`
    /// trigger finds a line of up to `depth` follow-ups (`queueing`).
    public mutating func trigger(policy: Policy, candidate: Int64, depth: Int = 1,
                                 sameParams: (Int64) -> Bool = { _ in false }) -> FlightTable.Decision {
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
            switch queueing(depth: depth, sameParams: sameParams) {
            case let .join(entry): return .coalesced(entry)
            case .full: return .rejected(holder, line: line.count)
            case .append:
                let after = line.last ?? holder
                line.append(candidate)
                return .followUp(candidate, after: after)
            }
        case .replace:
            let stopping = [holder] + line
            draining.formUnion(stopping)
            self.holder = candidate
            line = []
            return .replaced(candidate, stopping: stopping)
        }
    }

    /// Whether a trigger under `policy` would make a run (and so needs an id for it).
    public func makesRun(policy: Policy, depth: Int = 1, sameParams: (Int64) -> Bool = { _ in false }) -> Bool {
        holder == nil || policy == .replace || (policy == .queue && queueing(depth: depth, sameParams: sameParams) == .append)
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

    /// A run of the key has ended: the first in line takes the key from its holder; a follow-up
    /// that ends before it starts (cancelled) leaves the line, which closes up.
    public mutating func ended(_ run: Int64) {
        if holder == run {
            holder = line.isEmpty ? nil : line.removeFirst()
        } else {
            line.removeAll { $0 == run }
        }
        draining.remove(run)
    }

    /// The run a debounced trigger of the key shares: the holder, else a follow-up in line order, the first
    /// that is not being replaced and that `pending` says debounces and has not started. Asked by
    /// `KeyDecision.pending`, on the windows a host's flights or a fleet's rows give (`KeyFacts`).
    public func pendingRun(where pending: (Int64) -> Bool) -> Int64? {
        for case let id? in [holder] + line.map(Optional.some) where !draining.contains(id) && pending(id) { return id }
        return nil
    }

    /// The run that may start now: the holder, once nothing of the key is still stopping.
    public var startable: Int64? { draining.isEmpty ? holder : nil }

    /// Whether nothing holds, waits in line or drains: the slot can be forgotten.
    public var isEmpty: Bool { holder == nil && line.isEmpty && draining.isEmpty }
}
