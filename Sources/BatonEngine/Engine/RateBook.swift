/// The recent run starts of each rate-limit bucket (a key, or an action), as a pure value: what
/// `rateLimit` is decided from. Seeded from the history's starts at start, so a restart keeps
/// every window.
public struct RateBook: Sendable, Equatable {
    /// Each bucket's starts, oldest first, pruned to those inside its window.
    public private(set) var starts: [String: [Timestamp]] = [:]
    /// Each bucket's window, as last recorded (for `sweep`), and how many starts were recorded.
    private var windows: [String: Duration] = [:]
    private var recorded = 0
    /// How many starts pass between sweeps of the buckets whose starts all left their window.
    static let sweepEvery = 1_024
    /// How many windows ahead `next` looks at most.
    static let furthestWindows = 10_000

    public init() {}

    /// The starts of `claim`'s bucket inside its window at `now`. A start after `now` (the wall
    /// clock stepped back) counts too: a step never lets more runs start.
    public func recent(_ claim: RateClaim, at now: Timestamp) -> [Timestamp] {
        (starts[claim.bucket] ?? []).filter { now - $0 < claim.limit.per }
    }

    /// When a start fits under `claim`'s limit again, behind `waiting` runs of the bucket not yet
    /// started: nil when one fits now. Past the window's starts, the waiting runs are taken to
    /// start as soon as each may (a window after the start they replace); a bucket whose waiting
    /// runs alone fill it answers a window from now (when they will start is not known).
    public func next(_ claim: RateClaim, at now: Timestamp, waiting: Int = 0) -> Timestamp? {
        let recent = recent(claim, at: now)
        let over = recent.count + waiting - claim.limit.runs
        guard over >= 0 else { return nil }
        guard !recent.isEmpty else { return now + claim.limit.per }
        // Bounded (a bucket with thousands waiting on a long window would pass what a timestamp
        // holds): a start that far off is asked again when its timer fires.
        let windows = min(over / recent.count + 1, Self.furthestWindows)
        return recent[over % recent.count] + claim.limit.per * windows
    }

    /// A run of `claim`'s bucket started at `at`: counted, and the starts out of the window dropped.
    public mutating func record(_ claim: RateClaim, at: Timestamp) {
        var list = (starts[claim.bucket] ?? []).filter { at - $0 < claim.limit.per }
        let index = list.firstIndex { at < $0 } ?? list.count
        list.insert(at, at: index)
        starts[claim.bucket] = list
        windows[claim.bucket] = claim.limit.per
        recorded += 1
        if recorded % Self.sweepEvery == 0 { sweep(at: at) }
    }

    /// Drops the buckets whose every start has left its window: a key started once (a commit's
    /// hash as a key param, say) is not kept for ever.
    mutating func sweep(at now: Timestamp) {
        for (bucket, list) in starts where list.last.map({ now - $0 >= windows[bucket] ?? .zero }) ?? true {
            starts[bucket] = nil
            windows[bucket] = nil
        }
    }
}

/// "May this run start now under its rate limit": the one rule a host's table
/// (`FlightTable.admit`), the fleet's starts (`RateBucket.admit`, from `FleetRates`) and its
/// trigger batches (`KeyDecision.admitStart`, from `KeyDecision.batch`) apply, each with its own
/// book and held runs, through one hold-then-count (`admit`).
extension RateBook {
    /// What `admit` did with a run.
    public enum Admission: Sendable, Equatable {
        /// It started, and its start counts in its bucket.
        case started
        /// Its rate limit holds it back until then: nothing else was asked, nothing counted.
        case held(until: Timestamp)
        /// Its rate limit lets it, but something else holds it back (`starts` said no): nothing counted.
        case waits
    }

    /// The one hold-then-count: run `run`, whose starts count against `claim` (nil: none, or no
    /// clock to count on: `starts` alone decides), asks to start at `now`. Held back by its rate
    /// limit (`hold`, behind the bucket's older runs held already, `held`), it gets when it may
    /// and nothing else is asked; else `starts` says whether the rest of its start holds (its
    /// key, its locks, its pause...), and a start counts (`record`) for the runs asked after it.
    @inline(__always)
    public mutating func admit<Held: Sequence<Int64>>(_ run: Int64, _ claim: RateClaim?, at now: Timestamp?, held: () -> Held,
                                                     starts: () -> Bool) -> Admission {
        guard let claim, let now else { return starts() ? .started : .waits }
        if let until = hold(run, claim, at: now, held: held()) { return .held(until: until) }
        guard starts() else { return .waits }
        record(claim, at: now)
        return .started
    }

    /// When run `run`, whose starts count against `claim`, may start, asked at `now`: nil when a
    /// start fits now (the caller counts it, `record`, once the run starts), else when one will.
    /// The bucket's runs held back already (`held`: their ids) that are older than `run` start
    /// first and count ahead of it; younger ones wait behind it and do not.
    public func hold(_ run: Int64, _ claim: RateClaim, at now: Timestamp, held: some Sequence<Int64>) -> Timestamp? {
        next(claim, at: now, waiting: held.count { $0 < run })
    }
}
