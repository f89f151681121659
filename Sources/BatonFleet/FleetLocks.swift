import BatonCore

/// Locks between actions across hosts (fleet schema version 12). One row per lock name
/// (`locks`) is locked `FOR UPDATE` by every decision to start a run that claims it, as a key's
/// slot row is by every decision about the key; the decision reads, under those rows, the runs
/// that hold the locks (loading or retrying, their `runs.locks` naming them) and the line of runs
/// waiting for them (queued, in the order of `runs.lock_wait`), rebuilds the engine's `LockBook`
/// from them and asks it (`LockBook.mayTake`, `wait(of:)`): the same rule as one machine, first
/// in first out fleet-wide, every lock taken at once or none.
///
/// Lock order, so that no two transactions deadlock: every key row a transaction locks (in key
/// order) before any lock row; its lock rows in one statement, in name order (`lockRows`); no key
/// row after a lock row. Only a start decision locks lock rows, after the one key row of its run.
/// An end locks none: holding is read from the runs' phases, so an end releases its locks
/// whoever writes it (its host, a cancel, the reaper's `host_lost`), and the hosts learn it
/// from the feed as they learn any end, and start the waiters it frees.
enum FleetLocks {
    /// A run that holds or waits for locks, as `live` reads it.
    struct Row: Sendable, Equatable {
        var run: Int64
        var action: String
        var phase: Phase
        /// The locks it claims, in its action's order.
        var locks: [String]
        /// Its place in the line (`runs.lock_wait`); nil when it has not waited.
        var place: Int64?
    }

    /// The runs in flight that claim any of `names` (every lock when nil): one row per run and
    /// lock, waiters first in line order, then the others by id.
    static func live(overlapping names: [String]?) -> FleetJournal.Statement {
        ("""
            SELECT r.id, r.action, r.phase, r.lock_wait, l.name FROM runs r, unnest(r.locks) WITH ORDINALITY AS l(name, n)
            WHERE r.locks IS NOT NULL AND r.phase IN ('queued', 'loading', 'retrying') AND ($1::text[] IS NULL OR r.locks && $1::text[])
            ORDER BY r.lock_wait NULLS LAST, r.id, l.n
            """, [names.map(FleetJournal.textArray)])
    }

    /// `live`'s rows, one per run, in its order.
    static func rows(_ result: [[String?]]) -> [Row] {
        var rows: [Row] = []
        for record in result {
            guard let id = record[0].flatMap({ Int64($0) }), let name = record[4] else { continue }
            if rows.last?.run == id {
                rows[rows.count - 1].locks.append(name)
                continue
            }
            rows.append(Row(run: id, action: record[1] ?? "", phase: Phase(rawValue: record[2] ?? "") ?? .failure, locks: [name],
                            place: record[3].flatMap { Int64($0) }))
        }
        return rows
    }

    /// The engine's book the rows say: the runs loading or retrying hold their locks; the queued
    /// runs with a place wait, in place order. `limits` is each lock's limit (the config's).
    static func book(_ rows: [Row], limits: [String: Int]) -> LockBook {
        var book = LockBook()
        for row in rows where row.phase == .loading || row.phase == .retrying {
            book.hold(row.run, action: row.action, locks: claims(row.locks, limits))
        }
        for row in rows.filter({ $0.phase == .queued && $0.place != nil }).sorted(by: { ($0.place!, $0.run) < ($1.place!, $1.run) }) {
            book.enqueue(row.run, action: row.action, locks: claims(row.locks, limits))
        }
        return book
    }

    /// What a run claiming `claims` decides: nil when it takes them all now, else what it waits
    /// for. It keeps its place in the line if it has one (with the claims it has now), or comes
    /// last: every run in line is older.
    static func decide(_ run: Int64, action: String, claims: [LockClaim], rows: [Row], limits: [String: Int]) -> LockWait? {
        var limits = limits
        for claim in claims { limits[claim.name] = claim.limit }
        var mine = rows.filter { $0.run != run }
        if let place = rows.first(where: { $0.run == run && $0.phase == .queued })?.place {
            mine.append(Row(run: run, action: action, phase: .queued, locks: claims.map(\.name), place: place))
        }
        var book = book(mine, limits: limits)
        book.enqueue(run, action: action, locks: claims)
        guard !book.mayTake(run) else { return nil }
        return book.wait(of: run)
    }

    /// What each run in line waits for now (those that could take their locks are not listed:
    /// their hosts start them at their next look).
    static func waits(_ rows: [Row], limits: [String: Int]) -> [Int64: LockWait] {
        let book = book(rows, limits: limits)
        var waits: [Int64: LockWait] = [:]
        for run in book.waiting { waits[run] = book.wait(of: run) }
        return waits
    }

    private static func claims(_ names: [String], _ limits: [String: Int]) -> [LockClaim] {
        names.map { LockClaim($0, limit: limits[$0] ?? 1) }
    }

    // MARK: In a start's transaction

    /// Gives each lock a row if it has none, in name order, then locks them all in name order:
    /// after every key row the transaction holds.
    static func lockRows(_ names: [String]) -> [FleetJournal.Statement] {
        let sorted = FleetJournal.textArray(Array(Set(names)).sorted())
        return [("INSERT INTO locks (name) SELECT n FROM unnest($1::text[]) AS n ORDER BY n ON CONFLICT DO NOTHING", [sorted]),
                ("SELECT name FROM locks WHERE name = ANY ($1::text[]) ORDER BY name FOR UPDATE", [sorted])]
    }

    /// In the transaction that would start `run` (holding its key's row): locks its locks' rows,
    /// reads their holders and line, and decides. Nil: the run takes them (its `locks` set; the
    /// caller writes its `loading` in the same transaction). Otherwise the run is put in line
    /// (keeping its place if it had one) and the wait is returned.
    static func acquire(_ run: Int64, action: Action, limits: [String: Int], on db: PGConnection) throws -> LockWait? {
        let names = action.locks.map(\.name)
        let results = try db.pipeline(lockRows(names) + [live(overlapping: names)])
        let wait = decide(run, action: action.name, claims: action.locks, rows: rows(results[2].rows), limits: limits)
        let place = wait == nil ? "NULL" : "coalesce(lock_wait, nextval('lock_waits'))"
        try db.query("UPDATE runs SET locks = $2::text[], lock_wait = \(place) WHERE id = $1", [String(run), FleetJournal.textArray(names)])
        return wait
    }
}
