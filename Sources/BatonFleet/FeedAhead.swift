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
    /// Transactions accounted for that the feed's last snapshot does not see: those delivered
    /// ahead, own commits with nothing to deliver, and those that wrote no transitions.
    private var accounted: Set<UInt64> = []
    /// Every transaction id from the last snapshot's `xmax` up to this one is in `accounted`.
    private var frontier: UInt64 = 0

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
        return Mark(since: max(frontier, seen.xmax), inProgress: seen.inProgress.filter { !accounted.contains($0) })
    }

    /// Whether own commit `commit` is delivered now; `position` is the feed's. Where it is (or has
    /// no transitions), it is accounted for; so is every transaction it shows wrote none.
    mutating func admit(_ commit: OwnCommit, position: FeedPosition?) -> Verdict {
        guard let position, position.reading == nil else { return .catchUp }
        let (seen, snapshot, xid) = (position.seen, commit.snapshot, commit.xid)
        if seen.sees(xid) || accounted.contains(xid) { return .none }
        // Those not accounted for: in progress at the mark or at the last catch-up, or from both's
        // ends on (below, `frontier` and what the last catch-up saw are accounted for).
        var waits = false
        func look(_ other: UInt64) {
            guard other != xid, snapshot.sees(other), !seen.sees(other), !accounted.contains(other) else { return }
            if commit.writers.contains(other) { waits = true } else { accounted.insert(other) }
        }
        commit.mark.inProgress.forEach(look)
        seen.inProgress.forEach(look)
        var other = max(commit.mark.since, frontier, seen.xmax)
        while other < snapshot.xmax {
            look(other)
            other += 1
        }
        if commit.rows.isEmpty || !waits { accounted.insert(xid) }
        advance(from: seen.xmax)
        if commit.rows.isEmpty { return .none }
        if waits { return .catchUp }
        delivered.insert(xid)
        return .deliver
    }

    /// A catch-up read up to `seen`: what it sees is forgotten.
    mutating func caughtUp(to seen: FeedSnapshot) {
        delivered = delivered.filter { !seen.sees($0) }
        accounted = accounted.filter { !seen.sees($0) }
        advance(from: seen.xmax)
    }

    /// The catch-up's transactions to leave out (`FleetFeed.catchUpQuery`'s $5).
    var excluded: [UInt64] { delivered.sorted() }

    private mutating func advance(from xmax: UInt64) {
        frontier = max(frontier, xmax)
        while accounted.contains(frontier) { frontier += 1 }
    }
}
