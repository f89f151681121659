import BatonEngine
import BatonRuntime
/// What a dead-man alert asks of each action: when it last succeeded, when it last ended in each
/// outcome, and how many failures have come in a row since its last success. Seeded from the
/// history at start (so a restart forgets nothing) and kept up by every run's end after that.
public struct DeadMan: Sendable, Equatable {
    public struct RunOutcome: Hashable, Sendable {
        public var action: String
        /// success, failure or cancelled.
        public var outcome: String
    }

    /// Seconds since the epoch of each action's last successful end.
    public private(set) var lastSuccess: [String: Double] = [:]
    /// Seconds since the epoch of each action's last end, by outcome.
    public private(set) var lastRun: [RunOutcome: Double] = [:]
    /// Failures in a row since the last success, by action. A cancellation neither breaks nor
    /// lengthens a streak: it says nothing of whether the action works.
    public private(set) var failureStreak: [String: Int] = [:]

    public init() {}

    /// Counts an ended run; a run that is not terminal, or has no end time, changes nothing.
    /// An end older than the one already known for its outcome does not move the timestamps back.
    public mutating func record(_ run: RunSnapshot) {
        guard run.phase.isTerminal, let ended = run.endedAt else { return }
        let seconds = Double(ended.rawValue) / 1e6
        let key = RunOutcome(action: run.action, outcome: run.phase.rawValue)
        // Each table looked up once (`default:` changes in place): a lookup hashes the action's name.
        Self.raise(&lastRun[key, default: seconds], to: seconds)
        switch run.phase {
        case .success:
            Self.raise(&lastSuccess[run.action, default: seconds], to: seconds)
            failureStreak[run.action] = 0
        case .failure:
            failureStreak[run.action, default: 0] += 1
        default:
            failureStreak[run.action, default: 0] += 0
        }
    }

    private static func raise(_ value: inout Double, to seconds: Double) { value = max(value, seconds) }

    /// Seeds one action from its history: its latest ended runs, newest first (enough of them to
    /// reach its last success, or the streak counts only those given), and its latest run in each
    /// outcome, which may be older than all of them.
    public mutating func seed(_ action: String, recent: [RunSnapshot], latest: [RunSnapshot]) {
        for run in latest where run.action == action { record(run) }
        var streak = 0
        for run in recent where run.action == action {
            if run.phase == .success { break }
            if run.phase == .failure { streak += 1 }
        }
        if !recent.isEmpty || !latest.isEmpty { failureStreak[action] = streak }
    }

    /// Only the actions `visible` lets through.
    public func only(_ visible: (String) -> Bool) -> DeadMan {
        var copy = self
        copy.lastSuccess = lastSuccess.filter { visible($0.key) }
        copy.lastRun = lastRun.filter { visible($0.key.action) }
        copy.failureStreak = failureStreak.filter { visible($0.key) }
        return copy
    }

    /// The three families, in the exposition.
    public func write(_ out: inout Exposition) {
        out.family("baton_last_success_timestamp_seconds", .gauge,
                   "When each action last ended in success, in seconds since the epoch (from the history, across restarts).")
        for (action, seconds) in lastSuccess.sorted(by: { $0.key < $1.key }) {
            out.sample("baton_last_success_timestamp_seconds", [("action", action)], seconds)
        }
        out.family("baton_last_run_timestamp_seconds", .gauge,
                   "When each action last ended in each outcome, in seconds since the epoch (from the history, across restarts).")
        for (key, seconds) in lastRun.sorted(by: { ($0.key.action, $0.key.outcome) < ($1.key.action, $1.key.outcome) }) {
            out.sample("baton_last_run_timestamp_seconds", [("action", key.action), ("outcome", key.outcome)], seconds)
        }
        out.family("baton_failure_streak", .gauge,
                   "Failures in a row since each action's last success (cancellations not counted), from the history, across restarts.")
        for (action, streak) in failureStreak.sorted(by: { $0.key < $1.key }) {
            out.sample("baton_failure_streak", [("action", action)], Double(streak))
        }
    }
}
