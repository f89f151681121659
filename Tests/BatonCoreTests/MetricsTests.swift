@testable import BatonMetrics
@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Metrics: histograms, the exposition text, counts")
struct MetricsTests {
    @Test("a value on a bound falls in that bucket; cumulative counts end with the total; sum and count")
    func histogram() {
        var histogram = Histogram(bounds: [1, 5, 10])
        for value in [0.5, 1, 1.5, 5, 11, 100] { histogram.observe(value) }
        #expect(histogram.cumulative == [2, 4, 4, 6])
        #expect(histogram.sum == 119)
        #expect(histogram.count == 6)
    }

    @Test("label values and help are escaped; numbers print as the format wants")
    func exposition() {
        var out = Exposition()
        out.family("x_total", .counter, "Help with \\ and\nnewline.")
        out.sample("x_total", [("action", "a\"b\\c\nd")], 3)
        out.sample("x_total", [], 0.25)
        out.sample("y", [], .infinity)
        out.sample("y", [], .nan)
        #expect(out.text == """
            # HELP x_total Help with \\\\ and\\nnewline.
            # TYPE x_total counter
            x_total{action="a\\"b\\\\c\\nd"} 3
            x_total 0.25
            y +Inf
            y NaN

            """)
        var histogram = Exposition()
        var h = Histogram(bounds: [0.5])
        h.observe(1)
        histogram.histogram("d_seconds", [("action", "a")], h)
        #expect(histogram.text == """
            d_seconds_bucket{action="a",le="0.5"} 0
            d_seconds_bucket{action="a",le="+Inf"} 1
            d_seconds_sum{action="a"} 1
            d_seconds_count{action="a"} 1

            """)
    }

    func run(_ action: String, _ phase: Phase, reason: String?, started: Int64?, ended: Int64?) -> RunSnapshot {
        var run = RunSnapshot(id: 1, action: action, key: action, phase: phase, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(microseconds: 0))
        run.startedAt = started.map { Timestamp(microseconds: $0) }
        run.endedAt = ended.map { Timestamp(microseconds: $0) }
        run.reason = reason
        return run
    }

    /// The transition that brought `run` to its phase, as the daemon passes it to `observed`.
    func ending(_ run: RunSnapshot, _ detail: TransitionDetail = TransitionDetail()) -> Transition {
        Transition(runID: run.id, seq: 2, from: .loading, to: run.phase, at: run.endedAt ?? Timestamp(microseconds: 0), detail: detail)
    }

    func ended(_ metrics: Metrics, _ run: RunSnapshot) {
        metrics.observed(run, ending(run), ranHere: true)
    }

    @Test("ended runs count by action, outcome and reason; a run that never started has no duration; live runs are not counted")
    func counts() {
        let metrics = Metrics()
        ended(metrics, run("a", .success, reason: "exit", started: 1_000_000, ended: 3_500_000))
        ended(metrics, run("a", .success, reason: "exit", started: 0, ended: 1_000))
        ended(metrics, run("a", .cancelled, reason: "cancelled", started: nil, ended: 10))
        ended(metrics, run("a", .loading, reason: nil, started: 0, ended: nil))
        metrics.triggered("a", decision: "created")
        metrics.triggered("a", decision: "created")
        metrics.triggered("b", decision: "denied")
        metrics.committed(seconds: 0.002, items: 3)
        metrics.committed(seconds: 0.0001, items: 1, synced: false)
        let counts = metrics.counts
        #expect(counts.runs == [Metrics.RunEnd(action: "a", outcome: "success", reason: "exit"): 2,
                                Metrics.RunEnd(action: "a", outcome: "cancelled", reason: "cancelled"): 1])
        #expect(counts.durations["a"]?.count == 2)
        #expect(counts.durations["a"]?.sum == 2.501)
        #expect(counts.triggers[Metrics.TriggerCount(action: "a", decision: "created")] == 2)
        #expect(counts.commitItems.sum == 4 && counts.commitSeconds.count == 1 && counts.commitSeconds.sum == 0.002)
        #expect(counts.unsyncedCommitSeconds.count == 1 && counts.unsyncedCommitSeconds.sum == 0.0001)
        let text = MetricsReport(counts: counts, actions: ["a"], live: [], storeUnavailable: false, connections: 0, version: "9", process: nil).text
        #expect(text.contains("baton_store_commit_duration_seconds_count{synced=\"true\"} 1\n"), "\(text)")
        #expect(text.contains("baton_store_commit_duration_seconds_count{synced=\"false\"} 1\n"), "\(text)")
    }

    @Test("a report leaves out what concerns actions the reader may not see, gauges included")
    func filtered() {
        let metrics = Metrics()
        ended(metrics, run("secret", .success, reason: "exit", started: 0, ended: 1))
        metrics.triggered("secret", decision: "created")
        ended(metrics, run("open", .failure, reason: "exit", started: 0, ended: 1))
        let report = MetricsReport(counts: metrics.counts, actions: ["open", "secret"], live: [run("secret", .loading, reason: nil, started: 0, ended: nil)],
                                   storeUnavailable: true, connections: 2, version: "9", process: nil)
        let all = report.text, some = report.only { $0 == "open" }.text
        #expect(all.contains("baton_runs_in_flight{action=\"secret\"} 1"))
        #expect(all.contains("baton_triggers_total{action=\"secret\",decision=\"created\"} 1"))
        #expect(!some.contains("secret"))
        #expect(some.contains("baton_runs_total{action=\"open\",outcome=\"failure\",reason=\"exit\"} 1"))
        #expect(some.contains("baton_runs_in_flight{action=\"open\"} 0"))
        #expect(some.contains("baton_store_unavailable 1\n") && some.contains("baton_connections 2\n"))
        #expect(some.contains("baton_build_info{version=\"9\"} 1"))
    }

    static let usage = TransitionDetail(reason: "exit", exitCode: 0,
                                        usage: ResourceUsage(cpuUser: .milliseconds(1_500), cpuSystem: .milliseconds(500), memoryPeak: 4_096))

    @Test("a fleet host's feed figures are read at each scrape from the source it follows; one machine shows none")
    func feedFigures() {
        let metrics = Metrics()
        let report = { MetricsReport(counts: metrics.counts, actions: [], live: [], storeUnavailable: false, connections: 0, version: "9", process: nil).text }
        #expect(!report().contains("baton_fleet_feed"))
        let figures = Locked(Metrics.FeedFigures(own: 40, read: 3, catchUps: 2))
        metrics.follow { figures.withLock { $0 } }
        #expect(report().contains("baton_fleet_feed_transitions_total{source=\"own\"} 40\n"))
        #expect(report().contains("baton_fleet_feed_transitions_total{source=\"read\"} 3\n"))
        figures.withLock { $0.catchUps = 5 }
        #expect(report().contains("# TYPE baton_fleet_feed_catchup_reads_total counter\nbaton_fleet_feed_catchup_reads_total 5\n"))
    }

    @Test("a run's end that ran here counts the run, its duration, its attempt's usage and the dead-man series")
    func observedHere() {
        let metrics = Metrics()
        let end = run("a", .success, reason: "exit", started: 1_000_000, ended: 3_000_000)
        metrics.observed(end, ending(end, Self.usage), ranHere: true)
        let counts = metrics.counts
        #expect(counts.runs == [Metrics.RunEnd(action: "a", outcome: "success", reason: "exit"): 1])
        #expect(counts.durations["a"]?.sum == 2)
        #expect(counts.cpuSeconds["a"]?.sum == 2 && counts.cpuSeconds["a"]?.count == 1)
        #expect(counts.memoryPeaks["a"]?.sum == 4_096)
        #expect(counts.deadMan.lastSuccess == ["a": 3])
    }

    @Test("a run's end that another host ran moves only the dead-man series")
    func observedElsewhere() {
        let metrics = Metrics()
        let end = run("a", .failure, reason: "exit", started: 1_000_000, ended: 3_000_000)
        metrics.observed(end, ending(end, Self.usage), ranHere: false)
        let counts = metrics.counts
        #expect(counts.runs.isEmpty && counts.durations.isEmpty && counts.cpuSeconds.isEmpty && counts.memoryPeaks.isEmpty)
        #expect(counts.deadMan.failureStreak == ["a": 1])
        #expect(counts.deadMan.lastRun == [DeadMan.RunOutcome(action: "a", outcome: "failure"): 3])
    }

    @Test("a retry that carries its attempt's usage counts the usage, not a run")
    func observedRetry() {
        let metrics = Metrics()
        let retrying = run("a", .retrying, reason: nil, started: 1_000_000, ended: nil)
        metrics.observed(retrying, ending(retrying, Self.usage), ranHere: true)
        let counts = metrics.counts
        #expect(counts.cpuSeconds["a"]?.count == 1 && counts.memoryPeaks["a"]?.count == 1)
        #expect(counts.runs.isEmpty && counts.durations.isEmpty && counts.deadMan == DeadMan())
    }

    @Test("a terminal transition on a snapshot that is not terminal counts nothing")
    func observedNotTerminal() {
        let metrics = Metrics()
        let live = run("a", .loading, reason: nil, started: 1_000_000, ended: 3_000_000)
        metrics.observed(live, Transition(runID: 1, seq: 2, from: .loading, to: .success, at: Timestamp(microseconds: 3_000_000)),
                         ranHere: true)
        let counts = metrics.counts
        #expect(counts.runs.isEmpty && counts.durations.isEmpty && counts.cpuSeconds.isEmpty && counts.deadMan == DeadMan())
    }

    @Test("/proc/self/stat is read after the command's last parenthesis, whatever the name holds")
    func processStat() throws {
        // Fields from 3 on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15)
        // cutime cstime priority nice threads itrealvalue starttime(22) vsize(23) rss(24) …
        let stat = "123 (a) b (c) S 1 123 123 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 4 0 5000 1048576 300 18446744073709551615"
        let stats = try #require(ProcessStats.parse(stat: stat, bootTime: 1_000, ticksPerSecond: 100, pageSize: 4_096, openFDs: 7, maxFDs: 1_024))
        #expect(stats.cpuSeconds == 4)
        #expect(stats.startTime == 1_050)
        #expect(stats.virtualBytes == 1_048_576)
        #expect(stats.residentBytes == 300 * 4_096)
        #expect(ProcessStats.parse(stat: "garbage", bootTime: 0, ticksPerSecond: 100, pageSize: 4_096, openFDs: 0, maxFDs: 0) == nil)
        #expect(ProcessStats.current() != nil)
    }
}
