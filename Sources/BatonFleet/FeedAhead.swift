/// What this host's feed delivered ahead of its catch-ups, as a value: its own commits
/// (`OwnCommit`), each delivered from its own rows when every other transaction that wrote
/// transitions and that its snapshot sees finished is delivered already (by a catch-up, or
/// ahead), and left to a catch-up otherwise.
///
/// Why that keeps the feed's order (`FeedPosition`): a transaction that wrote a key's transitions
/// took the key's row first, after every earlier writer of that key committed; so each of those
/// is finished in the snapshot the transaction took after its writes, and is delivered before it.
/// A run's own transitions are a key's. Transactions that its snapshot sees in progress, or that
/// commit after it, wrote no key it holds: delivering it first is an order a catch-up could give.
///
/// Which finished transactions wrote transitions, the commit asks PostgreSQL (`OwnCommit.writers`)
/// from the feed's mark on (`Mark`): every transaction below `since` and not listed in progress is
/// accounted for, seen by the last catch-up or delivered ahead, or known to have written none.
/// The others that the commit's snapshot sees finished and that wrote no transitions (another
/// database's, the lease's, a subtransaction's: no snapshot lists one in progress, aborted ones)
/// are accounted for then, so that they never hold up a later commit.
///
/// A catch-up leaves out the transactions delivered ahead (`excluded`); once its snapshot sees
/// one, the delta it reads from never holds it again, and it is forgotten.
struct FeedAhead: Equatable, Sendable {
    /// Where a commit asks which transactions wrote transitions: from `since` on, and those of
    /// `inProgress` (the last catch-up's snapshot saw them in progress, and nobody accounted for them).
    struct Mark: Equatable, Sendable {
        var since: UInt64
        var inProgress: [UInt64]
    }

    /// Own commits delivered ahead that the feed's last snapshot does not see.
    private(set) var delivered: Set<UInt64> = []
    /// Transactions accounted for that the feed's last snapshot does not see: own commits with
    /// nothing to deliver, and those that wrote no transitions. Forgotten once below `frontier`
    /// and not in progress at the last catch-up: nothing looks there again.
    private var accounted: Set<UInt64> = []
    /// Transactions after the last catch-up's `xmax` that a commit's snapshot showed in progress
    /// (they wrote no key that commit holds), or finished with transitions not delivered yet:
    /// looked at again by each later commit until accounted for or caught up (`frontier` passes
    /// them: one long transaction anywhere in the cluster must not make every commit look at
    /// every id after it).
    private var open: Set<UInt64> = []
    /// Every transaction id from the last snapshot's `xmax` up to this one is delivered,
    /// accounted for or open.
    private var frontier: UInt64 = 0
    /// The most commits delivered ahead between two catch-ups (while catch-ups fail, say): past
    /// it, commits are left to the catch-up, whose parameter lists those delivered ahead.
    static let most = 50_000

    enum Verdict: Equatable {
        /// Deliver its rows now.
        case deliver
        /// Nothing to deliver: a catch-up read it already, or it wrote no transitions.
        case none
        /// A transaction that wrote transitions and that it sees finished is not delivered yet (or
        /// the feed has no position, or is midway through a catch-up): a catch-up delivers it,
        /// with what it follows.
        case catchUp
    }

    /// The mark a commit asks from (nil while the feed has no position or is midway: its
    /// commits are caught up).
    func mark(_ position: FeedPosition?) -> Mark? {
        guard let position, position.reading == nil else { return nil }
        let seen = position.seen
        return Mark(since: max(frontier, seen.xmax), inProgress: (seen.inProgress.filter { !settled($0) } + open).sorted())
    }

    /// Whether own commit `commit` is delivered now; `position` is the feed's. Where it is (or has
    /// no transitions), it is accounted for; so is every transaction it shows wrote none.
    mutating func admit(_ commit: OwnCommit, position: FeedPosition?) -> Verdict {
        guard let position, position.reading == nil else { return .catchUp }
        let (seen, snapshot, xid) = (position.seen, commit.snapshot, commit.xid)
        if seen.sees(xid) || settled(xid) { return .none }
        open.remove(xid)
        // Those not accounted for: in progress at the last catch-up, open, and from the frontier
        // on (below it, and what the last catch-up saw, are accounted for).
        var waits = false
        func look(_ other: UInt64) {
            guard other != xid, !seen.sees(other), !settled(other) else { return }
            if snapshot.sees(other), !commit.writers.contains(other) {
                // Finished, and wrote no transitions.
                open.remove(other)
                accounted.insert(other)
                return
            }
            // In progress at the commit (it holds no key the commit took), or finished with
            // transitions not delivered yet (the commit waits for a catch-up): looked at again.
            if snapshot.sees(other) { waits = true }
            if other >= seen.xmax && other < snapshot.xmax { open.insert(other) }
        }
        seen.inProgress.forEach(look)
        Array(open).forEach(look)
        var other = max(frontier, seen.xmax)
        while other < snapshot.xmax {
            look(other)
            other += 1
        }
        defer { advance(seen) }
        if commit.rows.isEmpty {
            accounted.insert(xid)
            return .none
        }
        if waits || delivered.count >= Self.most { return .catchUp }
        delivered.insert(xid)
        return .deliver
    }

    /// A catch-up read up to `seen`: what it sees is forgotten.
    mutating func caughtUp(to seen: FeedSnapshot) {
        delivered = delivered.filter { !seen.sees($0) }
        accounted = accounted.filter { !seen.sees($0) }
        // One it shows in progress below its `xmax` is looked at as the catch-up's.
        open = open.filter { !seen.sees($0) && $0 >= seen.xmax }
        advance(seen)
    }

    /// The catch-up's transactions to leave out (`FleetFeed.catchUpQuery`'s $5).
    var excluded: [UInt64] { delivered.sorted() }

    private func settled(_ id: UInt64) -> Bool { delivered.contains(id) || accounted.contains(id) }

    private mutating func advance(_ seen: FeedSnapshot) {
        frontier = max(frontier, seen.xmax)
        while settled(frontier) || open.contains(frontier) { frontier += 1 }
        // What is below the frontier and was not in progress at the last catch-up is never looked
        // at again: forgotten, now and then (another database may burn ids by the thousand).
        if accounted.count > 4_096 {
            let kept = Set(seen.inProgress)
            accounted = accounted.filter { $0 >= frontier || kept.contains($0) }
        }
    }
}
