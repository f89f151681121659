import BatonCore
import FoundationEssentials

/// Rate limits across a fleet (`rateLimit`): a bucket (a key, or an action: `RateClaim.bucket`)
/// counts the starts of every host's runs, from the `runs` rows (`started_at`, a run's first
/// `loading`). A transaction that decides a trigger of a rate-limited action, or starts one of
/// its runs, takes the bucket's advisory lock first, then reads its starts inside the window and
/// its runs made but not started; the engine decides on them (`KeyDecision` with the view's
/// `Rate`, `RateBook.next` at a start), as on one machine. Two hosts' decisions on one bucket
/// are thereby one after the other, and each sees the other's committed starts.
///
/// Lock order: the bucket locks in their keys' order, after the key rows and lock rows the
/// transaction takes (a trigger batch's opening; a start's `writeStarts`), and before nothing
/// else but the end of the transaction.
enum FleetRates {
    typealias Statement = FleetJournal.Statement

    /// One bucket as its rows say, read under its lock: the first starts inside its window
    /// (oldest first), and the runs made but not started (queued, never loading) with their keys.
    struct Bucket: Sendable, Equatable {
        var starts: [Timestamp] = []
        var waiting: [Int64: String] = [:]

        /// The engine's book of the bucket's starts.
        func book(_ claim: RateClaim) -> RateBook {
            var book = RateBook()
            for start in starts { book.record(claim, at: start) }
            return book
        }

        /// What a trigger of `key` is decided with: when a start fits behind the runs waiting,
        /// and behind those of other keys only (a replace stops its own key's).
        func rate(_ claim: RateClaim, key: String, at now: Timestamp) -> KeyDecision.Rate {
            let book = book(claim)
            return KeyDecision.Rate(limit: claim.limit, next: book.next(claim, at: now, waiting: waiting.count),
                                    nextReplacing: book.next(claim, at: now, waiting: waiting.values.count { $0 != key }))
        }
    }

    /// The lock of one bucket, held to the transaction's end.
    static func lock(_ bucket: String) -> FleetAdvisoryLock { FleetAdvisoryLock("baton rate", bucket) }

    /// A bucket's rows, read after its lock: each run of the action (of the key, for a key's
    /// bucket) that started inside the window by the database's clock, or is queued and never
    /// started (`id`, `key`, `started_at`).
    static func read(_ claim: RateClaim, action: String, key: String) -> Statement {
        let window = String(claim.limit.per.microseconds)
        return ("""
            SELECT id, key, started_at FROM runs
            WHERE action = $1 AND ($2::text IS NULL OR key = $2)
              AND (started_at >= \(FleetCooldown.databaseNow) - $3::bigint OR (phase = 'queued' AND started_at IS NULL))
            """, [action, claim.limit.scope == .key ? key : nil, window])
    }

    static func bucket(_ rows: [[String?]]) -> Bucket {
        var bucket = Bucket()
        for row in rows {
            guard let id = row[0].flatMap({ Int64($0) }) else { continue }
            if let started = row[2].flatMap({ Int64($0) }) { bucket.starts.append(Timestamp(rawValue: started)) }
            else { bucket.waiting[id] = row[1] ?? "" }
        }
        bucket.starts.sort()
        return bucket
    }

    /// The statements that lock the buckets of `claims` (bucket → a run's action and key), in
    /// their locks' order, then read each; and which bucket each read (after the locks) is.
    static func opening(_ claims: [String: (claim: RateClaim, action: String, key: String)]) -> (statements: [Statement], buckets: [String]) {
        let buckets = claims.keys.sorted()
        return (FleetAdvisoryLock.statements(buckets.map(lock)) + buckets.map { read(claims[$0]!.claim, action: claims[$0]!.action, key: claims[$0]!.key) },
                buckets)
    }
}

extension FleetCoordinator {
    /// In a start's transaction, holding the rows' keys and lock rows: which of the runs in
    /// `rows` (`startable`'s columns) are held back by their rate limit now. Each bucket is
    /// locked (in bucket order) and read, then its runs are let start oldest first while a start
    /// fits (`RateBook.next`), each counted as it is let.
    func rateHeld(_ rows: [[String?]], on db: PGConnection) throws -> Set<Int64> {
        var claims: [String: (claim: RateClaim, action: String, key: String)] = [:]
        var runs: [(id: Int64, bucket: String)] = []
        for row in rows {
            let run = FleetRows.run(row)
            guard let claim = conductor.action(named: run.action)?.rateClaim(key: run.key) else { continue }
            claims[claim.bucket] = (claim, run.action, run.key)
            runs.append((run.id, claim.bucket))
        }
        guard !claims.isEmpty else { return [] }
        let opening = FleetRates.opening(claims)
        let read = try db.pipeline(opening.statements)
        let reads = read.suffix(opening.buckets.count)
        var books: [String: RateBook] = [:]
        for (bucket, rows) in zip(opening.buckets, reads) { books[bucket] = FleetRates.bucket(rows.rows).book(claims[bucket]!.claim) }
        let now = Timestamp.now
        var held = Set<Int64>()
        for run in runs.sorted(by: { $0.id < $1.id }) {
            let claim = claims[run.bucket]!.claim
            if books[run.bucket]!.next(claim, at: now) != nil { held.insert(run.id) } else { books[run.bucket]!.record(claim, at: now) }
        }
        return held
    }
}
