import BatonCore

/// What the feed's refresh last handed the loop of the fleet's runs in flight (each run with the
/// row it was decoded from), and the runs whose transitions the feed delivered since: so that a
/// refresh decodes and hands only what changed (a run new, different or gone) instead of every
/// run in flight once a second. The feed's thread owns it.
///
/// The loop's table (`CoordinatorState.fleetInFlight`) changes only by the refresh and by the
/// feed's deliveries, in the order the feed posts them: a run whose row and decorations are as the
/// last refresh handed them, and that was not delivered since, holds there what that refresh
/// handed; so after the changes are applied the table is exactly the read, as a whole hand-over
/// would make it (`HandedRunsTests`). As a backstop, every `wholeEvery` refreshes (about once a
/// minute) and after the feed reconnects (`forget`) a refresh hands every run again.
struct HandedRuns: Sendable {
    /// How many refreshes in a row hand only changes before one hands every run again.
    static let wholeEvery = 60

    private struct Handed: Sendable {
        var row: [String?]
        var run: RunSnapshot
    }

    /// The runs last handed, by id; nil before the first refresh (which hands every run).
    private var handed: [Int64: Handed]?
    /// Runs the feed delivered a transition of since the last refresh.
    private var delivered: Set<Int64> = []
    /// Refreshes since the last that handed every run.
    private var sinceWhole = 0

    /// The next refresh hands every run (the feed reconnected: whatever it missed, the loop's
    /// table is made whole again).
    mutating func forget() {
        (handed, delivered, sinceWhole) = (nil, [], 0)
    }

    /// A delivery of a transition of `run` was posted to the loop.
    mutating func delivering(_ run: Int64) {
        if handed != nil { delivered.insert(run) }
    }

    /// The event that brings the loop's table to `rows` (the refresh's whole read, the run's id in
    /// each row's first column), and remembers them. `run` decodes a row into the run handed (with
    /// its decorations); `same` says whether a run handed before still has its decorations (what
    /// the row does not hold). A row as it was handed, of a run not delivered since and the same,
    /// is neither decoded nor handed again.
    mutating func refresh(_ rows: [[String?]], run: ([String?]) -> RunSnapshot, same: (RunSnapshot) -> Bool) -> CoordinatorState.Event {
        if sinceWhole >= Self.wholeEvery { forget() }
        sinceWhole += 1
        var read: [Int64: Handed] = [:]
        read.reserveCapacity(rows.count)
        var changed: [RunSnapshot] = []
        for row in rows {
            guard let id = row.first.flatMap({ $0 }).flatMap({ Int64($0) }) else { continue }
            if let old = handed?[id], !delivered.contains(id), old.row == row, same(old.run) {
                read[id] = old
                continue
            }
            let decoded = run(row)
            read[id] = Handed(row: row, run: decoded)
            changed.append(decoded)
        }
        defer { (handed, delivered) = (read, []) }
        guard let handed else { return .refreshed(changed) }
        let gone = handed.keys.filter { read[$0] == nil } + delivered.filter { read[$0] == nil && handed[$0] == nil }
        return .refreshedChanges(changed: changed, gone: gone)
    }
}
