import BatonEngine
import BatonRuntime
/// The counters and histograms batond keeps since it started: runs ended, their durations,
/// triggers by decision, and store commits. Recorded from whichever thread learns of each
/// event; read whole for a scrape. Gauges (runs in flight, connections) are read at scrape time
/// from their owners instead.
public final class Metrics: Sendable {
    public struct RunEnd: Hashable, Sendable {
        public var action: String
        /// success, failure or cancelled.
        public var outcome: String
        /// exit, timeout, replaced, cancelled, host_lost, …; empty when none.
        public var reason: String
    }

    public struct TriggerCount: Hashable, Sendable {
        public var action: String
        /// created, followUp, joined, coalesced, rejected, replaced or denied.
        public var decision: String
    }

    public struct WebhookCount: Hashable, Sendable {
        /// The hook's name; empty for a path that names no hook (never the path itself: labels
        /// an outsider chooses would grow the series without bound).
        public var hook: String
        /// The HTTP status answered.
        public var code: Int
    }

    /// One series of `baton_webhook_ignored_total`.
    public struct WebhookIgnoredCount: Hashable, Sendable {
        /// The hook's name.
        public var hook: String
        /// What passed the delivery over: event, when or param (`HookRules.Reason`).
        public var reason: String
    }

    /// Everything counted so far.
    public struct Counts: Sendable {
        public var runs: [RunEnd: UInt64] = [:]
        public var durations: [String: Histogram] = [:]
        /// Per attempt that ran a process: its CPU seconds and its peak memory, by action.
        public var cpuSeconds: [String: Histogram] = [:]
        public var memoryPeaks: [String: Histogram] = [:]
        public var triggers: [TriggerCount: UInt64] = [:]
        public var webhookRequests: [WebhookCount: UInt64] = [:]
        public var webhookIgnored: [WebhookIgnoredCount: UInt64] = [:]
        /// Commits that synced (an `fdatasync`, where the store is FULL), and those that did not.
        public var commitSeconds = Histogram(bounds: Histogram.commitBounds)
        public var unsyncedCommitSeconds = Histogram(bounds: Histogram.commitBounds)
        public var commitItems = Histogram(bounds: Histogram.groupBounds)
        /// The last ends and failure streaks, seeded from the history: not only since start.
        public var deadMan = DeadMan()
        /// A fleet host's feed, read from `feedSource` for each scrape; nil on one machine.
        public var feed: FeedFigures?
        /// Where a fleet host's feed figures are read (`follow(feed:)`).
        var feedSource: (@Sendable () -> FeedFigures)?
    }

    /// What a fleet host's feed delivered since start: transitions from this host's own commits,
    /// transitions its catch-ups read from the fleet, and those catch-ups' statements.
    public struct FeedFigures: Equatable, Sendable {
        public var own: Int, read: Int, catchUps: Int
        public init(own: Int, read: Int, catchUps: Int) { (self.own, self.read, self.catchUps) = (own, read, catchUps) }
    }

    private let state = Locked(Counts())

    public init() {}

    /// A committed transition's counts under one lock (three a run's end took, each with its own
    /// hashes of the action's name, 1.6 % of the loop's work, issue 39): the attempt's figures and
    /// the run's end when `ranHere` (in a fleet a host counts the runs it ran), the dead-man
    /// series whoever ran it (the action's last success is the fleet's).
    public func observed(_ run: RunSnapshot, _ transition: Transition, ranHere: Bool) {
        // Only two fields read before the guard, no copy of the whole detail kept (its strings
        // and arrays retained): most transitions count nothing.
        let usage = ranHere && transition.detail.cpuUser != nil && transition.detail.cpuSystem != nil
        let terminal = transition.to.isTerminal && run.phase.isTerminal
        guard usage || terminal else { return }
        state.withLock { counts in
            if usage { counts.attemptEnded(run.action, transition.detail) }
            if terminal {
                counts.deadMan.record(run)
                if ranHere { counts.ended(run) }
            }
        }
    }

    /// Seeds the dead-man series of `action` from the history (`DeadMan.seed`), at start.
    public func seed(_ action: String, recent: [RunSnapshot], latest: [RunSnapshot]) {
        state.withLock { $0.deadMan.seed(action, recent: recent, latest: latest) }
    }

    /// One request answered by the webhook listener.
    public func webhookAnswered(hook: String, code: Int) {
        state.withLock { $0.webhookRequests[WebhookCount(hook: hook, code: code), default: 0] += 1 }
    }

    /// One authenticated delivery a hook's rules ignored (answered 202, no run), and why.
    public func webhookIgnored(hook: String, reason: String) {
        state.withLock { $0.webhookIgnored[WebhookIgnoredCount(hook: hook, reason: reason), default: 0] += 1 }
    }

    public func triggered(_ action: String, decision: String) {
        state.withLock { $0.triggers[TriggerCount(action: action, decision: decision), default: 0] += 1 }
    }

    /// One store transaction: how long it took, and how many journal items it carried.
    /// One history commit: how long it took, its items, and whether it waited for an `fdatasync`
    /// (one made `synchronous = NORMAL` for process groups alone, `Store.relaxes`, did not).
    public func committed(seconds: Double, items: Int, synced: Bool = true) {
        state.withLock { counts in
            if synced { counts.commitSeconds.observe(seconds) } else { counts.unsyncedCommitSeconds.observe(seconds) }
            counts.commitItems.observe(Double(items))
        }
    }

    public var counts: Counts {
        var counts = state.withLock { $0 }
        // Read outside the lock: the source reads counters of its own.
        counts.feed = counts.feedSource?()
        return counts
    }

    /// From now on `counts` reads the figures of this host's feed from `figures` (a fleet host).
    public func follow(feed figures: @escaping @Sendable () -> FeedFigures) { state.withLock { $0.feedSource = figures } }
}

extension Metrics.Counts {
    mutating func ended(_ run: RunSnapshot) {
        let end = Metrics.RunEnd(action: run.action, outcome: run.phase.rawValue, reason: run.reason ?? "")
        runs[end, default: 0] += 1
        if let start = run.startedAt, let ended = run.endedAt {
            let seconds = Double(ended.rawValue - start.rawValue) / 1e6
            durations[run.action, default: Histogram(bounds: Histogram.durationBounds)].observe(max(seconds, 0))
        }
    }

    mutating func attemptEnded(_ action: String, _ detail: TransitionDetail) {
        guard let user = detail.cpuUser, let system = detail.cpuSystem else { return }
        cpuSeconds[action, default: Histogram(bounds: Histogram.durationBounds)].observe(Double(user + system) / 1e6)
        if let peak = detail.memoryPeak {
            memoryPeaks[action, default: Histogram(bounds: Histogram.memoryBounds)].observe(Double(peak))
        }
    }
}
