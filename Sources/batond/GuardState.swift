/// What the guard of a fleet host's runs (`batond --guard-runs`) decides, as a value: it holds
/// the host's own deadline, the fence time batond sends after each lease renewal, and kills every
/// run of the host when that time comes without a later one, or when batond is gone (its end of
/// the pipe closed: an exit, a crash, kill -9, or an exec): at once before any deadline, else at
/// the deadline (the runs are left to their shims within the lease, for the host's next start to
/// take back: that start ends this guard first, `GuardLink.endPrevious`). A frozen batond
/// (SIGSTOP, a swap storm) renews nothing and fences nothing; its guard, not frozen with it, kills
/// the runs before the database can count the lease out. The guard's loop (`RunGuard.run`)
/// performs the effects and wakes at `wake`.
struct GuardState: Equatable {
    enum Event: Equatable {
        /// batond renewed its lease: the runs may live until `at` (CLOCK_BOOTTIME, ns).
        case deadline(UInt64)
        /// The guard woke at `now` (CLOCK_BOOTTIME, ns): a deadline, or a read that came first.
        case time(UInt64)
        /// batond's end of the pipe closed.
        case batondGone
        /// batond gave its lease up (a clean stop that left no run loading): no start will take
        /// anything back, and another host may take the keys at once.
        case released
    }

    enum Effect: Equatable {
        /// SIGKILL every process of the host's runs, saying why.
        case killRuns(Reason)
        /// The guard's work is done.
        case exit
    }

    enum Reason: Equatable {
        case leaseDeadline
        case batondGone
    }

    /// The time the runs may live until, while batond keeps renewing; nil before the first
    /// renewal (no run starts before it) and after a deadline passed, until batond sends a new one.
    private(set) var deadline: UInt64?
    private(set) var ended = false
    /// batond's end of the pipe closed while a deadline held: the guard waits for it, then ends.
    private(set) var batondGone = false
    /// The lease was given up: once batond is gone, nothing waits for a deadline.
    private(set) var released = false

    /// When the loop must wake, if nothing comes on the pipe first.
    var wake: UInt64? { ended ? nil : deadline }

    mutating func handle(_ event: Event) -> [Effect] {
        guard !ended else { return [] }
        switch event {
        case let .deadline(at):
            // A later renewal never moves the deadline back: out of order, the earlier one is stale.
            deadline = max(deadline ?? 0, at)
            return []
        case let .time(now):
            guard let deadline, now >= deadline else { return [] }
            self.deadline = nil
            guard !batondGone else {
                ended = true
                return [.killRuns(.batondGone), .exit]
            }
            return [.killRuns(.leaseDeadline)]
        case .released:
            released = true
            return []
        case .batondGone:
            // Within the lease the runs are left to their shims, for this host's next start to
            // take back (issue 41, part 3): they die at the deadline, before another host may
            // take their keys, unless that start ends this guard first. Without a deadline, at once.
            guard deadline == nil || released else { batondGone = true; return [] }
            ended = true
            return [.killRuns(.batondGone), .exit]
        }
    }

    /// The guard's pipe carries one line per renewal, `deadline NS`, and `released` at a stop that gave the lease up.
    static func event(in line: Substring) -> Event? {
        if line == "released" { return .released }
        let fields = line.split(separator: " ")
        guard fields.count == 2, fields[0] == "deadline", let at = UInt64(fields[1]) else { return nil }
        return .deadline(at)
    }
}
