import BatonCore

/// A transaction of this host, as its own feed learns it without reading the fleet (issue 39,
/// item 4): its committer asks, in the round trip of its COMMIT (`statements`), for the
/// transaction's id, a snapshot taken inside it after its writes, and its transitions with their
/// runs as a catch-up reads them (`CatchUpColumns`); once committed it hands them to this host's
/// feed (`FleetCompany.committed`), which delivers them at once where nothing they may follow is
/// still undelivered (`FeedAhead`), and otherwise catches up as a notification would make it.
///
/// The feed's catch-up after each of this host's own commits was a transaction of its own, a
/// run's second; a host alone in the fleet now reads the fleet only at its once-a-second tick,
/// and with company its feed ticks for other hosts' commits, not for its own.
struct OwnCommit: Sendable, Equatable {
    /// The transaction's id (`transitions.xid` of what it wrote).
    var xid: UInt64
    /// The ids of its subtransactions that wrote transitions (a savepoint's: `end_starts`), read
    /// from those rows' `xmin`: no snapshot lists a subtransaction in progress, so once any later
    /// transaction finished, a snapshot tells them from finished transactions by nothing.
    var subtransactions: [UInt64] = []
    /// A snapshot taken in the transaction after every row lock it took: every transaction whose
    /// writes it waited for, or read, is finished in it.
    var snapshot: FeedSnapshot
    /// Its transitions, in id order, each with its run as the transaction left it, as read
    /// (`CatchUpColumns`): decoded on the feed's thread, and only where delivered (`decoded`).
    var rows: [[String?]]
    /// When (the loop's clock) its statements were sent: every transaction committed before is
    /// finished in `snapshot`.
    var began: ContinuousClock.Instant

    /// Sent last before the COMMIT, in its pipeline; `init` reads their results.
    static let statements: [FleetJournal.Statement] = [
        ("SELECT pg_current_xact_id_if_assigned()::text, pg_current_snapshot()::text", []),
        // Each row's `xmin` last: the (sub)transaction that inserted it, 32 bits.
        ("SELECT \(CatchUpColumns.select.sql), t.xmin::text FROM transitions t JOIN runs r ON r.id = t.run_id "
            + "WHERE t.xid = pg_current_xact_id_if_assigned() ORDER BY t.id", []),
    ]

    /// From the results of `statements` (the last two of `results` before the COMMIT's); nil
    /// where the transaction wrote nothing (it had no id) or the results are not theirs.
    init?(_ results: some Collection<PGRows>, began: ContinuousClock.Instant) {
        let results = Array(results)
        guard results.count == 2, let first = results[0].rows.first, first.count == 2,
              let xid = first[0].flatMap({ UInt64($0) }), let snapshot = first[1].flatMap(FeedSnapshot.init) else { return nil }
        let rows = results[1].rows
        let inserters = Set(rows.compactMap { row in row.last.flatMap { $0 }.flatMap { UInt32($0) } })
        self.init(xid: xid, snapshot: snapshot, rows: rows.map { Array($0.dropLast()) }, began: began)
        subtransactions = inserters.map { Self.widened($0, after: xid) }.filter { $0 != xid }.sorted()
    }

    init(xid: UInt64, subtransactions: [UInt64] = [], snapshot: FeedSnapshot, rows: [[String?]], began: ContinuousClock.Instant) {
        self.xid = xid
        self.subtransactions = subtransactions
        self.snapshot = snapshot
        self.rows = rows
        self.began = began
    }

    /// The 64-bit id of a 32-bit `xmin` of transaction `top` (its own, or a subtransaction's,
    /// which comes after it): in `top`'s epoch, or the next where the low 32 bits wrapped since.
    static func widened(_ xmin: UInt32, after top: UInt64) -> UInt64 {
        let widened = (top & ~0xFFFF_FFFF) | UInt64(xmin)
        return widened < top ? widened + (1 << 32) : widened
    }

    /// Its transitions decoded, each with its run as it was at that transition.
    var decoded: [CatchUpColumns.Row] { rows.map { CatchUpColumns.decode($0) } }

    /// The results of `statements` in `results`, a pipeline that ended with them and a COMMIT.
    static func results(in results: [PGRows]) -> ArraySlice<PGRows> {
        results.dropLast().suffix(statements.count)
    }
}

/// What this host's feed delivered ahead of its catch-ups, as a value: its own commits
/// (`OwnCommit`), each delivered from its own rows when every other transaction its snapshot sees
/// finished is delivered already (by a catch-up, or ahead), and left to a catch-up otherwise.
///
/// Why that keeps the feed's order (`FeedPosition`): a transaction that wrote a key's transitions
/// took the key's row first, after every earlier writer of that key committed; so each of those
/// is finished in the snapshot the transaction took after its writes, and is delivered before it.
/// A run's own transitions are a key's. Transactions that its snapshot sees in progress, or that
/// commit after it, wrote no key it holds: delivering it first is an order a catch-up could give.
///
/// A catch-up leaves out the transactions delivered ahead (`excluded`); once its snapshot sees
/// one, the delta it reads from never holds it again, and it is forgotten.
struct FeedAhead: Equatable, Sendable {
    /// Own commits delivered ahead that the feed's last snapshot does not see.
    private(set) var delivered: Set<UInt64> = []
    /// Every transaction id from the last snapshot's `xmax` up to this one is in `delivered`
    /// (where the scan for undelivered transactions starts).
    private var frontier: UInt64 = 0

    enum Verdict: Equatable {
        /// Deliver its rows now.
        case deliver
        /// Delivered already: a catch-up read it.
        case read
        /// A transaction it sees finished is not delivered yet (or the feed has no position, or
        /// is midway through a catch-up): a catch-up delivers it, with what it follows.
        case catchUp
    }

    /// Whether own commit `xid`, with subtransactions `subtransactions`, whose snapshot is
    /// `snapshot`, is delivered now; `position` is the feed's. Where it is, it is counted
    /// delivered, its subtransactions with it.
    mutating func admit(_ xid: UInt64, subtransactions: [UInt64] = [], snapshot: FeedSnapshot, position: FeedPosition?) -> Verdict {
        guard let position, position.reading == nil else { return .catchUp }
        let seen = position.seen
        if seen.sees(xid) || delivered.contains(xid) { return .read }
        let (delivered, own) = (delivered, Set(subtransactions + [xid]))
        let undelivered = { (other: UInt64) in !own.contains(other) && snapshot.sees(other) && !delivered.contains(other) }
        if seen.inProgress.contains(where: undelivered) { return .catchUp }
        var other = max(frontier, seen.xmax)
        while other < snapshot.xmax {
            if undelivered(other) { return .catchUp }
            other += 1
        }
        self.delivered.formUnion(own)
        advance(from: seen.xmax)
        return .deliver
    }

    /// A catch-up read up to `seen`: what it sees is forgotten.
    mutating func caughtUp(to seen: FeedSnapshot) {
        delivered = delivered.filter { !seen.sees($0) }
        advance(from: seen.xmax)
    }

    /// The catch-up's transactions to leave out (`FleetFeed.catchUpQuery`'s $5).
    var excluded: [UInt64] { delivered.sorted() }

    private mutating func advance(from xmax: UInt64) {
        frontier = max(frontier, xmax)
        while delivered.contains(frontier) { frontier += 1 }
    }
}
