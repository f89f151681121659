/// The locks between actions as a value: which runs hold each lock, and the runs that are ready
/// to start (their key free, their creation durable) but wait for a lock, first in first out.
/// `FlightTable` keeps one and asks it before it counts a run as running.
///
/// Invariants (the random walk checks them after every step):
/// - a lock has at most `limit` holders (the limit of the claims they took it under);
/// - a run takes all of its locks at once or none, so no two runs ever wait for each other;
/// - a waiting run is passed by no younger run that wants one of its locks (it reserves a place
///   in each, free or not, so that it cannot starve), and waits only while one of its locks is
///   full, counting the older waiters that want it.
public struct LockBook: Sendable {
    struct Claim: Sendable {
        var action: String
        var locks: [LockClaim]
    }

    private var claims: IDMap<Int64, Claim> = [:]
    private var holders: [String: [Int64]] = [:]
    /// The runs ready to start but waiting for a lock, oldest first.
    public private(set) var waiting: [Int64] = []

    public init() {}

    /// Records the locks a new run will take before it starts (none for most actions).
    public mutating func register(_ run: Int64, action: String, locks: [LockClaim]) {
        guard !locks.isEmpty else { return }
        claims[run] = Claim(action: action, locks: locks)
    }

    /// Takes every lock of `run` at once when each has room beyond its holders and the places
    /// `reserved` by older waiters of this pass; otherwise the run waits (kept in its place in the
    /// line, or put at its end) and reserves a place in each of its locks. A run without locks
    /// takes none and is never refused.
    public mutating func take(_ run: Int64, reserved: inout [String: Int]) -> Bool {
        guard let claim = claims[run] else { return true }
        let free = claim.locks.allSatisfy { holders[$0.name, default: []].count + reserved[$0.name, default: 0] < $0.limit }
        guard free else {
            for lock in claim.locks { reserved[lock.name, default: 0] += 1 }
            if !waiting.contains(run) { waiting.append(run) }
            return false
        }
        for lock in claim.locks { holders[lock.name, default: []].append(run) }
        waiting.removeAll { $0 == run }
        return true
    }

    /// Records a run as holding its locks whatever room they have: the fleet rebuilds a book from
    /// its database, where the runs loading or retrying hold the locks they were started with.
    public mutating func hold(_ run: Int64, action: String, locks: [LockClaim]) {
        guard !locks.isEmpty else { return }
        claims[run] = Claim(action: action, locks: locks)
        for lock in locks { holders[lock.name, default: []].append(run) }
    }

    /// Puts a run at the end of the line of waiters: the fleet rebuilds the line from its
    /// database, oldest first. A run already known keeps its place.
    public mutating func enqueue(_ run: Int64, action: String, locks: [LockClaim]) {
        guard !locks.isEmpty, claims[run] == nil else { return }
        claims[run] = Claim(action: action, locks: locks)
        waiting.append(run)
    }

    /// Whether a run that has not taken its locks may take them all now: each has room beyond
    /// its holders and the older waiters that want it (`wait(of:)` finds none full). The same
    /// rule as `take` in `admit`'s pass, where each older waiter counts once in each of its
    /// locks, as a holder if it took them or as a reservation if it did not.
    public func mayTake(_ run: Int64) -> Bool { !holds(run) && wait(of: run) == nil }

    /// A run waits no more for now (held back before it starts); it keeps its claims.
    public mutating func unwait(_ run: Int64) { waiting.removeAll { $0 == run } }

    /// A run has ended (or was dropped): it holds and waits for nothing any more.
    public mutating func release(_ run: Int64) {
        guard let claim = claims.removeValue(forKey: run) else { return }
        for lock in claim.locks {
            holders[lock.name]?.removeAll { $0 == run }
            if holders[lock.name]?.isEmpty == true { holders[lock.name] = nil }
        }
        waiting.removeAll { $0 == run }
    }

    /// The locks a run takes before it starts.
    public func locks(of run: Int64) -> [LockClaim] { claims[run]?.locks ?? [] }

    /// The runs holding `lock`, in the order they took it.
    public func holders(of lock: String) -> [Int64] { holders[lock] ?? [] }

    /// Whether the run holds its locks (it has some, and has taken them).
    public func holds(_ run: Int64) -> Bool {
        guard let first = claims[run]?.locks.first else { return false }
        return holders[first.name]?.contains(run) ?? false
    }

    /// What a run that has not taken its locks waits for: the first of them that is full,
    /// counting the older waiters that want it, with who holds it and who is ahead; nil when
    /// every lock has room (the run waits for a start slot, or for nothing).
    public func wait(of run: Int64) -> LockWait? {
        guard let claim = claims[run], !holds(run) else { return nil }
        let older = waiting.prefix { $0 != run }
        for lock in claim.locks {
            let held = holders(of: lock.name)
            let ahead = older.filter { claims[$0]?.locks.contains { $0.name == lock.name } ?? false }
            guard held.count + ahead.count >= lock.limit else { continue }
            return LockWait(lock: lock.name, limit: lock.limit, holders: held.map(holder),
                            ahead: held.count >= lock.limit ? [] : ahead.map(holder))
        }
        return nil
    }

    /// Every lock held now, with its holders.
    public var held: [String: [Int64]] { holders }

    private func holder(_ run: Int64) -> LockWait.Holder {
        LockWait.Holder(run: run, action: claims[run]?.action ?? "")
    }
}
