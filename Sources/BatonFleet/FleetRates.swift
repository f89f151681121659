import BatonCore
import FoundationEssentials

/// Rate limits across a fleet (`rateLimit`, schema 18): a bucket (a key, or an action:
/// `RateClaim.bucket`) counts the starts of every host's runs, from the `runs` rows (`rate_at`,
/// a run's first `loading` by the database's clock). A transaction that decides a trigger of a
/// rate-limited action, or starts one of its runs, takes the bucket's advisory lock first, then
/// reads its starts inside the window and its runs made but not started, and decides with the
/// engine's `RateBook` on the database's clock, as one machine does on its own: two hosts'
/// decisions on one bucket are one after the other, and each sees the other's committed starts.
/// A run a start holds back gets `rate_until` (when it fits, `RateBook.next`): looks leave it out
/// until then, and the bucket's later runs count it ahead of them (oldest first: the engine's
/// `RateBook.hold`, as a host's `FlightTable` asks it).
///
/// Lock order: the bucket locks in their keys' order, after the key rows and lock rows the
/// transaction takes (a trigger batch's opening; a start's `writeStarts`, `readBuckets`).
enum FleetRates {
    typealias Statement = FleetJournal.Statement

    /// One bucket as its rows say, read under its lock: the engine's value (`RateBucket`), whose
    /// rules (`rate`, `admit`) a trigger and a start ask.
    typealias Bucket = RateBucket

    /// The lock of one bucket, held to the transaction's end.
    static func lock(_ bucket: String) -> FleetAdvisoryLock { FleetAdvisoryLock("baton rate", bucket) }

    /// A bucket's rows, read after its lock (`id`, `key`, `rate_at`, `rate_until`): each run of
    /// the action (of the key, for a key's bucket) that started inside the window by the
    /// database's clock, then each that is queued and never started. By the indexes of schema 18.
    static func read(_ claim: RateClaim, action: String, key: String) -> Statement {
        let scope = claim.limit.scope == .key ? key : nil
        return ("""
            WITH c AS (SELECT \(FleetCooldown.databaseNow) - $3::bigint AS since)
            SELECT id, key, rate_at, NULL::bigint FROM runs, c
            WHERE action = $1 AND ($2::text IS NULL OR key = $2) AND rate_at IS NOT NULL AND rate_at > c.since
            UNION ALL
            SELECT id, key, NULL::bigint, rate_until FROM runs
            WHERE action = $1 AND ($2::text IS NULL OR key = $2) AND phase = 'queued' AND started_at IS NULL
            """, [action, scope, String(claim.limit.per.microseconds)])
    }

    static func bucket(_ rows: [[String?]]) -> Bucket {
        var bucket = Bucket()
        for row in rows {
            guard let id = row[0].flatMap({ Int64($0) }) else { continue }
            if let started = row[2].flatMap({ Int64($0) }) { bucket.starts.append(Timestamp(rawValue: started)) }
            else { bucket.waiting[id] = .init(key: row[1] ?? "", until: row[3].flatMap { Int64($0) }.map(Timestamp.init(rawValue:))) }
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

    /// Whether a look leaves run `r` out: its rate limit holds it back past now.
    static let held = "(r.rate_until IS NOT NULL AND r.rate_until > \(FleetCooldown.databaseNow))"
}

extension FleetCoordinator {
    /// In a start's transaction, holding the rows' keys and lock rows: the buckets the engine's
    /// start plan names (`KeyDecision.Starts.Plan.buckets`), each by one of its runs (its action's
    /// claim, by the definition it was triggered with), each locked (in its lock's order) and
    /// read, with the database's clock read after them; nil where none is asked. The engine's
    /// second call (`KeyDecision.decide`) decides on them which runs their rate limits hold back
    /// (`RateBucket.admit`, oldest first).
    func readBuckets(_ wanted: [String: (run: RunSnapshot, action: Action?)], on db: PGConnection) throws -> KeyDecision.Starts.Buckets? {
        var claims: [String: (claim: RateClaim, action: String, key: String)] = [:]
        for (bucket, (run, action)) in wanted {
            if let claim = action?.rateClaim(key: run.key) { claims[bucket] = (claim, run.action, run.key) }
        }
        guard !claims.isEmpty else { return nil }
        let opening = FleetRates.opening(claims)
        let read = try db.pipeline(opening.statements + [("SELECT \(FleetCooldown.databaseNow)", [])])
        guard let clock = read.last?.first?[0].flatMap({ Int64($0) }) else { throw PGError(message: "the database's clock could not be read") }
        var buckets: [String: FleetRates.Bucket] = [:]
        for (bucket, rows) in zip(opening.buckets, read.dropLast().suffix(opening.buckets.count)) { buckets[bucket] = FleetRates.bucket(rows.rows) }
        return KeyDecision.Starts.Buckets(now: Timestamp(rawValue: clock), buckets: buckets)
    }
}
