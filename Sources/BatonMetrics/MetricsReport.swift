import BatonEngine
import BatonRuntime
/// What a scrape shows: the counts kept since start, gauges read now, and the process's own
/// series, as one exposition text. Built by batond for the `metrics` operation and for
/// `GET /metrics`; the caller leaves out the actions the reader may not see.
public struct MetricsReport: Sendable {
    public var counts: Metrics.Counts
    /// The configured actions: each gets its in-flight and queued gauges, zero or not.
    public var actions: [String]
    /// The runs in flight (queued, loading, retrying).
    public var live: [RunSnapshot]
    public var storeUnavailable: Bool
    public var connections: Int
    public var version: String
    public var process: ProcessStats?
    /// The actions paused now (`baton pause`, `pauseAfterFailures`).
    public var paused: Set<String> = []

    public init(counts: Metrics.Counts, actions: [String], live: [RunSnapshot], storeUnavailable: Bool,
                connections: Int, version: String, process: ProcessStats?) {
        self.counts = counts
        self.actions = actions
        self.live = live
        self.storeUnavailable = storeUnavailable
        self.connections = connections
        self.version = version
        self.process = process
    }

    /// The report without what concerns actions `visible` refuses.
    public func only(_ visible: (String) -> Bool) -> MetricsReport {
        var report = self
        report.actions = actions.filter(visible)
        report.live = live.filter { visible($0.action) }
        report.paused = paused.filter(visible)
        report.counts.runs = counts.runs.filter { visible($0.key.action) }
        report.counts.durations = counts.durations.filter { visible($0.key) }
        report.counts.cpuSeconds = counts.cpuSeconds.filter { visible($0.key) }
        report.counts.memoryPeaks = counts.memoryPeaks.filter { visible($0.key) }
        report.counts.triggers = counts.triggers.filter { visible($0.key.action) }
        report.counts.deadMan = counts.deadMan.only(visible)
        return report
    }

    public var text: String {
        var out = Exposition()
        out.family("baton_build_info", .gauge, "Baton's version; always 1.")
        out.sample("baton_build_info", [("version", version)], 1)
        runs(&out)
        counts.deadMan.write(&out)
        triggersAndStore(&out)
        if let process { Self.process(process, &out) }
        return out.text
    }

    private func runs(_ out: inout Exposition) {
        out.family("baton_runs_total", .counter, "Runs ended since batond started, by action, outcome and reason.")
        for (end, count) in counts.runs.sorted(by: { ($0.key.action, $0.key.outcome, $0.key.reason) < ($1.key.action, $1.key.outcome, $1.key.reason) }) {
            out.sample("baton_runs_total", [("action", end.action), ("outcome", end.outcome), ("reason", end.reason)], Double(count))
        }
        out.family("baton_run_duration_seconds", .histogram, "How long runs took from their first start to their end, by action.")
        for (action, histogram) in counts.durations.sorted(by: { $0.key < $1.key }) {
            out.histogram("baton_run_duration_seconds", [("action", action)], histogram)
        }
        out.family("baton_run_cpu_seconds", .histogram, "CPU time (user and system) of each attempt's processes, by action.")
        for (action, histogram) in counts.cpuSeconds.sorted(by: { $0.key < $1.key }) {
            out.histogram("baton_run_cpu_seconds", [("action", action)], histogram)
        }
        out.family("baton_run_memory_peak_bytes", .histogram, "The largest memory of each attempt's processes, by action.")
        for (action, histogram) in counts.memoryPeaks.sorted(by: { $0.key < $1.key }) {
            out.histogram("baton_run_memory_peak_bytes", [("action", action)], histogram)
        }
        let names = Array(Set(actions + live.map(\.action))).sorted()
        out.family("baton_runs_in_flight", .gauge, "Runs loading or waiting to retry now, by action.")
        for name in names {
            out.sample("baton_runs_in_flight", [("action", name)], Double(live.filter { $0.action == name && $0.phase != .queued }.count))
        }
        out.family("baton_runs_queued", .gauge, "Runs queued now (follow-ups, and runs waiting for a free slot), by action.")
        for name in names {
            out.sample("baton_runs_queued", [("action", name)], Double(live.filter { $0.action == name && $0.phase == .queued }.count))
        }
        out.family("baton_action_paused", .gauge, "1 while the action is paused (baton pause, pauseAfterFailures), else 0, by action.")
        for name in names { out.sample("baton_action_paused", [("action", name)], paused.contains(name) ? 1 : 0) }
        // Only the pairs that wait now: which locks an action holds is the config's, not the runs'.
        out.family("baton_runs_waiting_for_lock", .gauge, "Runs queued now because a lock of their action is not free, by action and the lock they wait for.")
        let waits = Dictionary(grouping: live.compactMap { run in run.waiting.map { LockWaitKey(action: run.action, lock: $0.lock) } }) { $0 }
        for (key, runs) in waits.sorted(by: { ($0.key.action, $0.key.lock) < ($1.key.action, $1.key.lock) }) {
            out.sample("baton_runs_waiting_for_lock", [("action", key.action), ("lock", key.lock)], Double(runs.count))
        }
    }

    private struct LockWaitKey: Hashable {
        var action: String
        var lock: String
    }

    private func triggersAndStore(_ out: inout Exposition) {
        out.family("baton_triggers_total", .counter, "Triggers answered since batond started, by action and decision.")
        for (key, count) in counts.triggers.sorted(by: { ($0.key.action, $0.key.decision) < ($1.key.action, $1.key.decision) }) {
            out.sample("baton_triggers_total", [("action", key.action), ("decision", key.decision)], Double(count))
        }
        out.family("baton_webhook_requests_total", .counter, "Requests the webhook listener answered, by hook and HTTP status.")
        for (key, count) in counts.webhookRequests.sorted(by: { ($0.key.hook, $0.key.code) < ($1.key.hook, $1.key.code) }) {
            out.sample("baton_webhook_requests_total", [("hook", key.hook), ("code", String(key.code))], Double(count))
        }
        out.family("baton_webhook_ignored_total", .counter, "Authenticated deliveries a hook's rules ignored (202, no run), by hook and reason.")
        for (key, count) in counts.webhookIgnored.sorted(by: { ($0.key.hook, $0.key.reason) < ($1.key.hook, $1.key.reason) }) {
            out.sample("baton_webhook_ignored_total", [("hook", key.hook), ("reason", key.reason)], Double(count))
        }
        out.family("baton_store_commit_duration_seconds", .histogram,
                   "How long each history transaction took to commit; synced=\"false\": one that did not wait for an fdatasync (process groups alone, or a store not FULL).")
        out.histogram("baton_store_commit_duration_seconds", [("synced", "true")], counts.commitSeconds)
        out.histogram("baton_store_commit_duration_seconds", [("synced", "false")], counts.unsyncedCommitSeconds)
        out.family("baton_store_commit_items", .histogram, "Journal items (trigger answers, transitions) per history transaction.")
        out.histogram("baton_store_commit_items", [], counts.commitItems)
        out.family("baton_store_unavailable", .gauge, "1 while the history cannot be written (a full disk, a deleted file), else 0.")
        out.sample("baton_store_unavailable", [], storeUnavailable ? 1 : 0)
        out.family("baton_connections", .gauge, "Client connections open on batond's socket.")
        out.sample("baton_connections", [], Double(connections))
        if let feed = counts.feed { Self.feed(feed, &out) }
    }

    private static func feed(_ feed: Metrics.FeedFigures, _ out: inout Exposition) {
        out.family("baton_fleet_feed_transitions_total", .counter,
                   "Transitions the fleet's feed delivered on this host: from its own commits, or read from the fleet by a catch-up.")
        out.sample("baton_fleet_feed_transitions_total", [("source", "own")], Double(feed.own))
        out.sample("baton_fleet_feed_transitions_total", [("source", "read")], Double(feed.read))
        out.family("baton_fleet_feed_catchup_reads_total", .counter, "Statements the fleet's feed ran to catch up on the fleet's transitions.")
        out.sample("baton_fleet_feed_catchup_reads_total", [], Double(feed.catchUps))
    }

    private static func process(_ stats: ProcessStats, _ out: inout Exposition) {
        let series: [(String, Exposition.Kind, String, Double)] = [
            ("process_cpu_seconds_total", .counter, "Total user and system CPU time spent in seconds.", stats.cpuSeconds),
            ("process_open_fds", .gauge, "Number of open file descriptors.", stats.openFDs),
            ("process_max_fds", .gauge, "Maximum number of open file descriptors.", stats.maxFDs),
            ("process_virtual_memory_bytes", .gauge, "Virtual memory size in bytes.", stats.virtualBytes),
            ("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.", stats.residentBytes),
            ("process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds.", stats.startTime),
        ]
        for (name, kind, help, value) in series {
            out.family(name, kind, help)
            out.sample(name, [], value)
        }
    }
}
