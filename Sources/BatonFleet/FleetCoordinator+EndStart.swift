import BatonCore
import FoundationEssentials

/// Runs started in the transaction that writes the ends of the runs before them, as one machine
/// starts the next run in the store item of the end (`ConductorState`): the writer's transaction
/// (`FleetWriter`) that ends runs of this host also claims this host's queued runs that may start
/// then — the follow-up of an ended run's key, a hook run its end made, a run waiting for a start
/// slot or a lock — instead of leaving them to the feed's tick after the end's NOTIFY (a commit,
/// a notification and four round trips later). The feed still starts whatever this leaves.
extension FleetCoordinator {
    /// Reserves, as the conductor hands the store an item that ends runs of this host, the start
    /// slots those ends free (while free), for the transaction that will write them: so that
    /// the feed, which sees a slot free once an end is decided, does not take it for a start of
    /// its own before the end is written. Returns how many. Called as the conductor hands the store its item, on the loop (elsewhere, or with nothing
    /// freed, none is reserved: the feed starts what may start).
    func reserveEndStarts(freedBy entries: [JournalEntry]) -> Int {
        let freed = entries.count { entry in
            guard case let .transition(t) = entry else { return false }
            return t.to.isTerminal && (t.from == .loading || t.from == .retrying)
        }
        guard freed > 0, reactor.isCurrent else { return 0 }
        return reserveStarts(freed)
    }

    /// The writer's transaction that held `reserved` slots committed, having claimed `claimed`:
    /// on the loop, those go to the conductor (each gives its slot back once counted), the
    /// other slots back now.
    func endStartsCommitted(_ claimed: [Claimed], reserved: Int) {
        reactor.onLoop { [self] in send(.settled(granted: reserved, claimed: claimed)) }
    }

    /// Gives `count` start slots back (on the loop).
    func releaseStarts(_ count: Int) {
        guard count > 0 else { return }
        reactor.onLoop { [self] in send(.settled(granted: count, claimed: [])) }
    }

    /// In the opening of the writer's transaction, after its own key rows: locks the key rows of
    /// up to `count` of this host's queued runs that hold a free key, in the order the feed
    /// starts them (`startWaiting`), skipping rows another transaction holds. It never waits
    /// for a row, so it adds no edge to the fleet's lock order (key rows in key order, then lock
    /// rows): a row it skips is another transaction's, whose commit notifies the feed.
    static func lockReady(incarnation: String, count: Int) -> FleetJournal.Statement {
        ("""
            SELECT k.key FROM runs r JOIN keys k ON k.key = r.key AND k.holder = r.id
            WHERE r.incarnation = $1 AND \(StartColumns.filter)
            ORDER BY r.lock_wait NULLS LAST, r.id LIMIT $2::bigint
            FOR UPDATE OF k SKIP LOCKED
            """, [incarnation, String(count)])
    }

    /// This host's queued runs that hold one of `keys` (rows the transaction holds) and that the
    /// rule would start (`StartColumns.filter`; `writeStarts` decides each again), with its
    /// columns, read after the transaction's ends are written (a follow-up holds its key by
    /// then), at most `count`, in the order the feed starts them.
    static func startable(keys: [String], incarnation: String, count: Int) -> FleetJournal.Statement {
        ("""
            SELECT \(StartColumns.select.sql) \(StartColumns.from)
            WHERE k.key = ANY ($1::text[]) AND r.incarnation = $2 AND \(StartColumns.filter)
            ORDER BY r.lock_wait NULLS LAST, r.id LIMIT $3::bigint
            """, [FleetJournal.textArray(keys), incarnation, String(count)])
    }

    /// In the writer's transaction, once its ends are written: claims up to `reserved` of this
    /// host's queued runs that hold one of `keys` and may start, behind a savepoint, so that a
    /// start the database refuses (a unique index: another run of the key is loading, whatever
    /// this host believed) leaves the ends to commit and the run to the feed. Returns the runs
    /// claimed, to hand to the conductor once the transaction commits.
    func startAfterEnds(reserved: Int, keys: [String], on db: PGConnection) throws -> [Claimed] {
        guard reserved > 0, !keys.isEmpty else { return [] }
        // Its generic plan (the writer's transaction opens with `FleetJournal.genericPlans`) reads
        // by the keys' index as a custom one does; `auto` planned it again at each end, 0.49 ms of
        // the server's time a plan, more than running it (docs/benchmarks.md).
        let read = try db.pipeline([("SAVEPOINT end_starts", []), Self.startable(keys: keys, incarnation: host.incarnation, count: reserved)])
        guard !read[1].rows.isEmpty else { return [] }
        do {
            return try writeStarts(read[1].rows, on: db).claimed
        } catch let error as PGError where !error.isConnectionProblem {
            try db.execute("ROLLBACK TO SAVEPOINT end_starts")
            log("runs could not start with the ends before them, left to the feed: \(error.message)")
            return []
        }
    }
}
