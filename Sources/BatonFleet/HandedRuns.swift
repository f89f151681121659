import BatonCore

/// What the feed's refresh last handed the loop of the fleet's runs in flight, and the runs whose
/// transitions the feed delivered since: so that a refresh hands only what changed (a run new,
/// different or gone) instead of every run in flight once a second. The feed's thread owns it.
///
/// The loop's table (`CoordinatorState.fleetInFlight`) changes only by the refresh and by the
/// feed's deliveries, in the order the feed posts them: a run neither changed since the last
/// refresh nor delivered since holds there what that refresh handed, so after the changes are
/// applied the table is exactly the read, as a whole hand-over would make it.
struct HandedRuns: Sendable {
    /// The runs last handed; nil before the first refresh (which hands every run).
    private var handed: [Int64: RunSnapshot]?
    /// Runs the feed delivered a transition of since the last refresh.
    private var delivered: Set<Int64> = []

    /// A delivery of a transition of `run` was posted to the loop.
    mutating func delivering(_ run: Int64) {
        if handed != nil { delivered.insert(run) }
    }

    /// The event that brings the loop's table to `live` (a whole refresh read), and remembers it.
    mutating func refresh(_ live: [RunSnapshot]) -> CoordinatorState.Event {
        let read = Dictionary(live.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        defer { (handed, delivered) = (read, []) }
        guard let handed else { return .refreshed(live) }
        let changed = read.values.filter { run in delivered.contains(run.id) || handed[run.id] != run }
        let gone = Set(handed.keys).union(delivered).filter { read[$0] == nil }
        return .refreshedChanges(changed: changed, gone: Array(gone))
    }
}
