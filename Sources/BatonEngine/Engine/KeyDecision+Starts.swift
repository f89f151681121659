/// Queued runs a store starts together, in one transaction that holds their keys (a fleet's start
/// batch: a look's, or the starts after ends in the writer's): the engine's one step for them
/// (`KeyDecision.starts`). The store reads each run's row as it is (`Starts.Row`: its slot, its
/// window's deadline, its action's pause, its rate limit's hold, each as kept, and the clock the
/// row was read with), calls `starts` once and performs what it answers. The arithmetic of the
/// windows (a debounce deadline passed, a pause that holds, a rate hold not over) is the
/// engine's, here, on the store's clock: the start rule (`mayStart`) decides each row as one
/// machine's `FlightTable` decides its runs; the runs it starts that count against a rate limit
/// then ask their bucket (read by the store once, under its lock, only where one is asked),
/// oldest first, through the one hold-then-count (`RateBucket.admit`).
extension KeyDecision {
    public enum Starts {
        /// One queued run as its start row has it.
        public struct Row: Sendable, Equatable {
            public var run: Int64
            public var phase: Phase
            /// Its key's slot: it starts only as the key's `startable` run.
            public var slot: KeySlot
            /// Who runs it (a fleet host's incarnation): only its owner's clock passes its window.
            public var owner: String?
            /// Its debounce window's deadline as kept (nil: it has none).
            public var window: Timestamp?
            /// Its action's pause, whether or not it holds at `now`.
            public var pause: ActionPause?
            /// It waits for an approver's yes.
            public var approving: Bool
            /// Until when a start batch held it back for its rate limit (nil: never held).
            public var rateUntil: Timestamp?
            public var needs: StartView.Needs
            /// The rate limit its start counts against (its action's), if any.
            public var rate: RateClaim?
            /// It started before (a restart, a takeover): its start was counted then, and its
            /// rate limit does not hold it again.
            public var startedBefore: Bool
            /// The store's clock when the row was read (a fleet: the database's).
            public var now: Timestamp

            public init(run: Int64, phase: Phase = .queued, slot: KeySlot, owner: String? = nil, window: Timestamp? = nil,
                        pause: ActionPause? = nil, approving: Bool = false, rateUntil: Timestamp? = nil, needs: StartView.Needs = .met,
                        rate: RateClaim? = nil, startedBefore: Bool = false, now: Timestamp) {
                self.run = run
                self.phase = phase
                self.slot = slot
                self.owner = owner
                self.window = window
                self.pause = pause
                self.approving = approving
                self.rateUntil = rateUntil
                self.needs = needs
                self.rate = rate
                self.startedBefore = startedBefore
                self.now = now
            }

            /// The rate limit a start of it asks now: none for a run that started before.
            public var claim: RateClaim? { startedBefore ? nil : rate }

            /// What the start rule decides this row on, for the store's owner `me`: its window
            /// passed for its owner only (`DebounceWindow.passed`), its pause as it holds at the
            /// row's clock (`ActionPause.holds`), its rate hold while not over.
            public func view(me: String) -> StartView {
                StartView(run: run, phase: phase, slot: slot, windowPassed: owner == me && DebounceWindow.passed(deadline: window, at: now),
                          paused: pause?.holds(at: now) ?? false, rateHeld: rateUntil.map { now < $0 } ?? false, approving: approving,
                          needs: needs)
            }

            /// The start rule's verdict on this row (`mayStart`), for the store's owner `me`.
            public func verdict(me: String) -> StartVerdict { mayStart(view(me: me)) }
        }

        /// What the store is asked to read before the rate limits are decided, once the rule has
        /// chosen the runs that may start: `ready`, in the rows' order (the store takes their
        /// locks' rows first: its lock order), and one run of each rate-limited bucket those of
        /// them that count against one ask (its claim names the bucket).
        public struct Wanted: Sendable, Equatable {
            public var ready: [Int64] = []
            public var buckets: [String: Int64] = [:]
            public init(ready: [Int64] = [], buckets: [String: Int64] = [:]) {
                self.ready = ready
                self.buckets = buckets
            }
        }

        /// The buckets `Wanted` names as the store read them under their locks, and its clock then.
        public struct Buckets: Sendable, Equatable {
            public var now: Timestamp
            public var buckets: [String: RateBucket]
            public init(now: Timestamp, buckets: [String: RateBucket] = [:]) {
                self.now = now
                self.buckets = buckets
            }
        }

        /// What the store performs, in this order.
        public enum Effect: Sendable, Equatable {
            /// Its rate limit holds it back until then: kept in its row (a look leaves it out until then).
            case holdRate(run: Int64, until: Timestamp)
            /// It starts: the store writes its `loading` (or takes its locks first).
            case start(Int64)
        }
    }

    /// The start batch's one step: each row decided by the start rule (`Row.verdict`); for the
    /// runs it starts, `read` is asked once (when any may start) for the buckets they count
    /// against; each of those runs asks its bucket, oldest first (`RateBucket.admit`, its hold
    /// kept for the younger ones), and a held one does not start. Answers the holds (oldest
    /// first), then the starts (in the rows' order). `me`: the store's own owner name.
    public static func starts(_ rows: [Starts.Row], me: String, read: (Starts.Wanted) throws -> Starts.Buckets?) rethrows -> [Starts.Effect] {
        let ready = rows.filter { $0.verdict(me: me) == .start }
        guard !ready.isEmpty else { return [] }
        var wanted = Starts.Wanted(ready: ready.map(\.run))
        for row in ready { if let claim = row.claim { wanted.buckets[claim.bucket] = row.run } }
        let read = try read(wanted)
        var effects: [Starts.Effect] = [], held: Set<Int64> = []
        if let read {
            var buckets = read.buckets
            for row in ready.sorted(by: { $0.run < $1.run }) {
                guard let claim = row.claim, buckets[claim.bucket] != nil else { continue }
                if case let .held(until) = buckets[claim.bucket]!.admit(row.run, claim, at: read.now) {
                    held.insert(row.run)
                    effects.append(.holdRate(run: row.run, until: until))
                }
            }
        }
        return effects + ready.filter { !held.contains($0.run) }.map { .start($0.run) }
    }
}

extension DebounceWindow {
    /// Whether a window whose deadline was kept as `deadline` (nil: none) has passed at `now`: a
    /// store that keeps the deadline alone (a fleet's run row) asks the window's rule with it.
    public static func passed(deadline: Timestamp?, at now: Timestamp) -> Bool {
        guard let deadline else { return true }
        return now >= deadline
    }

    /// How long a window whose deadline was kept as `deadline` has left at `now`; nil once it `passed`.
    public static func left(deadline: Timestamp, at now: Timestamp) -> Duration? {
        passed(deadline: deadline, at: now) ? nil : deadline - now
    }
}
