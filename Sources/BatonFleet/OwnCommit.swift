import BatonCore

/// A transaction of this host, as its own feed learns it without reading the fleet (issue 39,
/// item 4): its committer asks, in the round trip of its COMMIT (`Ask.statements`), for the
/// transaction's id, a snapshot taken inside it after its writes, which transactions wrote
/// transitions since the feed's mark (`FeedAhead.Mark`), and its own transitions with their runs
/// as a catch-up reads them (`CatchUpColumns`); once committed it hands them to this host's feed
/// (`FleetCompany.committed`), which delivers them at once where nothing they may follow is still
/// undelivered (`FeedAhead`), and otherwise catches up as a notification would make it.
///
/// The feed's catch-up after each of this host's own commits was a transaction of its own, a
/// run's second; a host alone in the fleet now reads the fleet at its once-a-second tick and
/// where another transaction's transitions came between, and with company its feed ticks for
/// other hosts' commits, not for its own (`baton_fleet_feed_transitions_total` counts both ways).
struct OwnCommit: Sendable, Equatable {
    /// The transaction's id (`transitions.xid` of what it wrote).
    var xid: UInt64
    /// A snapshot taken in the transaction after every row lock it took: every transaction whose
    /// writes it waited for, or read, is finished in it.
    var snapshot: FeedSnapshot
    /// The mark the feed had published when the statements were sent, and the transactions from
    /// it on (`Mark.since`, or in `Mark.inProgress`) that had committed transitions, but this one.
    var mark: FeedAhead.Mark
    var writers: Set<UInt64>
    /// Its transitions, in id order, each with its run as the transaction left it, as read
    /// (`CatchUpColumns`): decoded on the feed's thread, and only where delivered (`decoded`).
    var rows: [[String?]]
    /// When (the loop's clock) its statements were sent: every transaction committed before is
    /// finished in `snapshot`.
    var began: ContinuousClock.Instant

    /// What a committer asks for its feed, read before its closing statements are sent: nil
    /// where no feed follows (`FleetCompany.ask`); no statements where the feed has no mark
    /// yet (a catch-up is asked for instead, once it committed).
    struct Ask: Sendable {
        let mark: FeedAhead.Mark?
        let began: ContinuousClock.Instant
        /// What to send last before the COMMIT (none without a mark).
        let statements: [FleetJournal.Statement]

        init(mark: FeedAhead.Mark?, began: ContinuousClock.Instant) {
            (self.mark, self.began) = (mark, began)
            statements = mark.map(OwnCommit.statements) ?? []
        }
    }

    /// What the results of an `Ask`'s statements say.
    enum Reading: Equatable, Sendable {
        case commit(OwnCommit)
        /// The transaction wrote nothing (it had no id).
        case nothing
        /// The feed had no mark, or the results could not be read: a catch-up reads the commit.
        case unread
    }

    /// Sent last before the COMMIT, in its pipeline; `read` reads their results.
    static func statements(_ mark: FeedAhead.Mark) -> [FleetJournal.Statement] {
        [(indexesOnly, []), (snapshotSQL, []),
         (writersSQL, [String(mark.since), String(mark.since &+ (1 << 40)), "{" + mark.inProgress.map(String.init).joined(separator: ",") + "}"]),
         (rowsSQL, [])]
    }

    /// For the rest of the transaction (its COMMIT follows them): each time PostgreSQL plans the
    /// statements below, it reads indexes, whatever the tables' statistics say then (a generic
    /// plan made while the tables were small is kept per connection until they are analyzed
    /// again, and scanned them whole as they grew).
    static let indexesOnly = "SET LOCAL enable_seqscan = off"
    /// The isolation too: the argument that a commit's earlier writers are finished in its
    /// snapshot holds under READ COMMITTED only (a REPEATABLE READ snapshot is taken before the
    /// key's row is waited for): any other, and the commit is left to a catch-up.
    static let snapshotSQL = "SELECT pg_current_xact_id_if_assigned()::text, pg_current_snapshot()::text, current_setting('transaction_isolation')"
    /// A range with both ends, and the list apart: their generic plans (the writer's transaction
    /// asks for those) read the index; `xid >= $1` alone was planned as a scan of every
    /// transition (a third of the table, by the planner's guess).
    static let writersSQL = "SELECT coalesce(string_agg(DISTINCT w.xid::text, ','), '') FROM ("
        + "SELECT t.xid FROM transitions t WHERE t.xid BETWEEN $1::xid8 AND $2::xid8 "
        + "UNION ALL SELECT t.xid FROM transitions t WHERE t.xid = ANY ($3::xid8[])"
        + ") w WHERE w.xid IS DISTINCT FROM pg_current_xact_id_if_assigned()"
    /// Each run by its key (a subquery the planner keeps whole: `OFFSET 0`): a plan cached while
    /// `runs` was small joined it by a scan of every run, then kept doing so.
    static let rowsSQL = "SELECT \(CatchUpColumns.select.sql) FROM transitions t "
        + "JOIN LATERAL (SELECT * FROM runs WHERE runs.id = t.run_id OFFSET 0) r ON true "
        + "WHERE t.xid = pg_current_xact_id_if_assigned() ORDER BY t.id"

    /// The results of `ask`'s statements (`results`: exactly theirs, the SET's first).
    static func read(_ ask: Ask, _ results: some Collection<PGRows>) -> Reading {
        let results = Array(results.dropFirst())
        guard let mark = ask.mark, results.count == 3, let first = results[0].rows.first, first.count == 3 else { return .unread }
        guard let text = first[0] else { return .nothing }
        guard first[2] == "read committed" else { return .unread }
        guard let xid = UInt64(text), let snapshot = first[1].flatMap(FeedSnapshot.init),
              let list = results[1].rows.first?.first ?? nil else { return .unread }
        let writers = list.split(separator: ",").compactMap { UInt64($0) }
        return .commit(OwnCommit(xid: xid, snapshot: snapshot, mark: mark, writers: Set(writers), rows: results[2].rows, began: ask.began))
    }

    /// Its transitions decoded, each with its run as it was at that transition.
    var decoded: [CatchUpColumns.Row] { rows.map { CatchUpColumns.decode($0) } }
}
