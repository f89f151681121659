/// Queued runs a store starts together, in one transaction that holds their keys (a fleet's start
/// batch: a look's, or the starts after ends in the writer's): the engine decides them in two pure
/// calls, the store reading between them. The store reads each run's row as it is (`Starts.Row`:
/// its slot, its window's deadline, its action's pause, its rate limit's hold, each as kept, and
/// the clock the row was read with) and calls `starts`: the start rule (`mayStart`) decides each
/// row as one machine's `FlightTable` decides its runs, with the windows' arithmetic (a debounce
/// deadline passed, a pause that holds, a rate hold not over) on the row's clock, and answers a
/// `Plan`: the runs that may start and the rate-limited buckets they ask. The store then takes
/// the plan's lock rows and reads its buckets (under their locks: its lock order) and calls
/// `decide` with the plan and what it read: each of the plan's runs that counts against a rate
/// limit asks its bucket, oldest first, through the one hold-then-count (`RateBucket.admit`). The
/// rule is not asked again: `decide` takes the runs the plan chose, and only `starts` makes a plan.
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

        /// What the start rule chose of a start batch, before its rate limits (`starts`): the rows
        /// of the runs that may start, in the rows' order (the store takes their locks' rows
        /// first: its lock order), and one run of each rate-limited bucket those of them that count
        /// against one ask (its claim names the bucket): the store reads these buckets, and nothing
        /// else, before `decide`. Only `starts` makes one.
        public struct Plan: Sendable, Equatable {
            public let rows: [Row]
            public let buckets: [String: Int64]

            init(rows: [Row], buckets: [String: Int64]) {
                self.rows = rows
                self.buckets = buckets
            }

            /// The runs that may start, in the rows' order.
            public var ready: [Int64] { rows.map(\.run) }
        }

        /// The buckets a `Plan` names as the store read them under their locks, and its clock then.
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

    /// The start batch's first call: each row decided by the start rule (`Row.verdict`); answers
    /// the runs it lets start and the buckets they ask (`Plan`). `me`: the store's own owner name.
    public static func starts(_ rows: [Starts.Row], me: String) -> Starts.Plan {
        let ready = rows.filter { $0.verdict(me: me) == .start }
        var buckets: [String: Int64] = [:]
        for row in ready { if let claim = row.claim { buckets[claim.bucket] = row.run } }
        return Starts.Plan(rows: ready, buckets: buckets)
    }

    /// The start batch's second call, on the `plan` of its first and the `buckets` the store read
    /// for it (nil: none read, or none asked): each of the plan's runs that counts against a read
    /// bucket asks it, oldest first (`RateBucket.admit`, its hold kept for the younger ones), and
    /// a held one does not start. Answers the holds (oldest first), then the starts (in the rows'
    /// order).
    public static func decide(_ plan: Starts.Plan, _ buckets: Starts.Buckets?) -> [Starts.Effect] {
        var effects: [Starts.Effect] = [], held: Set<Int64> = []
        if let buckets {
            var read = buckets.buckets
            for row in plan.rows.sorted(by: { $0.run < $1.run }) {
                guard let claim = row.claim, read[claim.bucket] != nil else { continue }
                if case let .held(until) = read[claim.bucket]!.admit(row.run, claim, at: buckets.now) {
                    held.insert(row.run)
                    effects.append(.holdRate(run: row.run, until: until))
                }
            }
        }
        return effects + plan.rows.filter { !held.contains($0.run) }.map { .start($0.run) }
    }
}
