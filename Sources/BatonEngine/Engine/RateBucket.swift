/// One rate-limit bucket as a store that keeps its runs in rows (the fleet) reads it, under its
/// lock: the starts inside its window (oldest first), and the runs made but not started, with
/// their keys and, where a start held one back, until when. The rules are the engine's book's
/// (`RateBook`), asked as a host's `FlightTable` asks its own.
public struct RateBucket: Sendable, Equatable {
    public struct Waiting: Sendable, Equatable {
        public var key: String
        /// When its rate limit lets it start, where a start held it back.
        public var until: Timestamp?
        public init(key: String, until: Timestamp? = nil) {
            self.key = key
            self.until = until
        }
    }

    public var starts: [Timestamp]
    public var waiting: [Int64: Waiting]

    public init(starts: [Timestamp] = [], waiting: [Int64: Waiting] = [:]) {
        self.starts = starts
        self.waiting = waiting
    }

    /// The engine's book of the bucket's starts.
    public func book(_ claim: RateClaim) -> RateBook {
        var book = RateBook()
        for start in starts { book.record(claim, at: start) }
        return book
    }

    /// What a trigger of `key` is decided with (`KeyDecision.Rate`): a start behind every run
    /// waiting, and, for a replace, behind those of other keys only.
    public func rate(_ claim: RateClaim, key: String, at now: Timestamp) -> KeyDecision.Rate {
        KeyDecision.Rate(claim, book: book(claim), at: now, waiting: waiting.count, waitingOtherKeys: waiting.values.count { $0.key != key })
    }

    /// Run `run` asks to start at `now` (the bucket's runs asked oldest first): the engine's one
    /// hold-then-count (`RateBook.admit`) on the bucket's book, `starts` saying whether the rest of
    /// its start holds. Held back, it gets when it may (kept in `waiting` when `keepsHold`: it then
    /// counts ahead of the younger ones) and nothing else is asked; let and started, its start
    /// counts (`started`). The fleet's starts ask it for the runs a start batch lets start
    /// (`KeyDecision.decide`, keeping the hold), its trigger batches for a new run (`KeyDecision.admitStart`).
    public mutating func admit(_ run: Int64, _ claim: RateClaim, at now: Timestamp, keepsHold: Bool = true,
                               starts: () -> Bool = { true }) -> RateBook.Admission {
        // The rules on a book rebuilt from `starts`: its own record of the start is dropped with
        // it; the bucket's start counts below (`started`).
        var rules = book(claim)
        let waiting = self.waiting
        let admission = rules.admit(run, claim, at: now, held: { waiting.lazy.filter { $0.value.until != nil }.map(\.key) }, starts: starts)
        switch admission {
        case .started: started(run, at: now)
        case let .held(until): if keepsHold { self.waiting[run]?.until = until }
        case .waits: break
        }
        return admission
    }

    /// Run `run` starts at `now`: it waits no longer, and its start counts.
    public mutating func started(_ run: Int64, at now: Timestamp) {
        waiting[run] = nil
        starts.append(now)
    }

    /// Run `run` ended before it started (a stop ended it queued): it waits no longer.
    public mutating func ended(_ run: Int64) {
        waiting[run] = nil
    }
}

extension KeyFacts {
    /// What a queued run's end (`StopDecision.ends`) leaves in a store's facts for the triggers
    /// after it: the run read in its end's phase and seq, waiting in no bucket (`RateBucket.ended`).
    public static func ended(_ end: Transition, runs: inout [Int64: Run], buckets: inout [String: RateBucket]) {
        runs[end.runID]?.phase = end.to
        runs[end.runID]?.lastSeq = end.seq
        for bucket in buckets.keys { buckets[bucket]?.ended(end.runID) }
    }
}

extension KeyDecision.Rate {
    /// The rate a trigger of a key is decided with, from its bucket's book: when a new run's start
    /// fits behind the bucket's `waiting` runs not yet started (`RateBook.next`), and, for a
    /// replace (which stops its own key's runs not yet started), behind `waitingOtherKeys`. One
    /// rule for a host's table (`FlightTable.rate`) and a fleet's bucket (`RateBucket.rate`).
    public init(_ claim: RateClaim, book: RateBook, at now: Timestamp, waiting: Int, waitingOtherKeys: Int) {
        self.init(limit: claim.limit, next: book.next(claim, at: now, waiting: waiting),
                  nextReplacing: book.next(claim, at: now, waiting: waitingOtherKeys))
    }
}
