/// The slot a scheduled firing is for: the latest time the action's schedules name at or before
/// the moment the timer fired (or its service started). That moment is later than the slot by the
/// jitter, the timer's accuracy and the service's start, and each host's clock differs; the slot
/// is the same on every host whose timer fired for it.
public enum ScheduleSlot {
    /// How far back a firing is looked for, in turn: the jitter and ten seconds (the timer's
    /// accuracy of one, the service's start) first, then wider for a `catchUp` firing at boot,
    /// long after its slot. A wider window finds the same slot: the latest firing is taken.
    public static func windows(jitter: Duration?) -> [Duration] {
        [(jitter ?? .zero) + .seconds(10), .seconds(3_600), .seconds(86_400), .seconds(32 * 86_400), .seconds(367 * 86_400)]
    }

    /// The latest of `firings` at or before `fired`, when any is.
    public static func latest(_ firings: [Timestamp], notAfter fired: Timestamp) -> Timestamp? {
        firings.filter { $0 <= fired }.max()
    }

    /// An unscheduled action's slot (a cron line's `--scheduled`): the time given, to the second.
    public static func truncated(_ time: Timestamp) -> Timestamp {
        Timestamp(rawValue: time.rawValue - ((time.rawValue % 1_000_000) + 1_000_000) % 1_000_000)
    }

    /// The slot of a firing at `fired` of an action with `schedules`: asks systemd-analyze for the
    /// firings in each window in turn (up to `perWindow` of them) and takes the latest at or
    /// before `fired`. Nil when no schedule names a time in the last year.
    public static func slot(fired: Timestamp, schedules: [String], jitter: Duration?,
                            perWindow: Int = 64) throws(SystemdCalendar.Problem) -> Timestamp? {
        for window in windows(jitter: jitter) {
            var found: [Timestamp] = []
            for expression in schedules {
                // Firings strictly after the window's start: the latest of those not after `fired`.
                var base = Timestamp(rawValue: fired.rawValue - window.microseconds - 1)
                while true {
                    let firings = try SystemdCalendar.elapses(expression, after: base, count: perWindow)
                    found += firings.filter { $0 <= fired }
                    guard firings.count == perWindow, let last = firings.last, last <= fired else { break }
                    base = last
                }
            }
            if let slot = latest(found, notAfter: fired) { return slot }
        }
        return nil
    }
}
