@testable import BatonMetrics
@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Metrics: the dead-man series (last success, last run by outcome, failure streak)")
struct DeadManTests {
    func run(_ id: Int64, _ action: String, _ phase: Phase, endedAt seconds: Double?) -> RunSnapshot {
        var run = RunSnapshot(id: id, action: action, key: action, phase: phase, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(microseconds: 0))
        run.endedAt = seconds.map { Timestamp(microseconds: Int64($0 * 1e6)) }
        return run
    }

    @Test("ends move the timestamps forward only; a success resets the streak, failures lengthen it, cancellations leave it")
    func record() {
        var dead = DeadMan()
        let ends: [(Phase, Double)] = [(.failure, 10), (.success, 20), (.failure, 30), (.cancelled, 40), (.failure, 50), (.success, 15)]
        var streaks: [Int] = []
        for (index, (phase, at)) in ends.enumerated() {
            dead.record(run(Int64(index + 1), "backup", phase, endedAt: at))
            streaks.append(dead.failureStreak["backup"] ?? -1)
        }
        #expect(streaks == [1, 0, 1, 1, 2, 0])
        #expect(dead.lastSuccess == ["backup": 20])
        #expect(dead.lastRun == [.init(action: "backup", outcome: "success"): 20, .init(action: "backup", outcome: "failure"): 50,
                                 .init(action: "backup", outcome: "cancelled"): 40])
        dead.record(run(9, "backup", .loading, endedAt: nil))
        dead.record(run(10, "other", .success, endedAt: nil))
        #expect(dead.lastSuccess.count == 1 && dead.failureStreak["other"] == nil)
    }

    @Test("seeding counts the failures before the last success, cancellations skipped, and takes each outcome's latest end")
    func seed() {
        var dead = DeadMan()
        let recent = [run(6, "backup", .failure, endedAt: 60), run(5, "backup", .cancelled, endedAt: 50),
                      run(4, "backup", .failure, endedAt: 40), run(3, "backup", .success, endedAt: 30),
                      run(2, "backup", .failure, endedAt: 20)]
        dead.seed("backup", recent: recent, latest: [recent[0], recent[1], recent[3]])
        #expect(dead.failureStreak == ["backup": 2])
        #expect(dead.lastSuccess == ["backup": 30])
        dead.seed("never", recent: [], latest: [])
        #expect(dead.failureStreak["never"] == nil)
    }

    /// A run's end as a host that did not run it hears it (in a fleet).
    func seen(_ metrics: Metrics, _ run: RunSnapshot) {
        metrics.observed(run, Transition(runID: run.id, seq: 2, from: .loading, to: run.phase, at: run.endedAt ?? Timestamp(microseconds: 0)), ranHere: false)
    }

    @Test("the exposition has all three families, with fractional seconds, and a report hides what the reader may not see")
    func text() {
        let metrics = Metrics()
        seen(metrics, run(1, "backup", .success, endedAt: 1_700_000_000.25))
        seen(metrics, run(2, "backup", .failure, endedAt: 1_700_000_100))
        seen(metrics, run(3, "secret", .failure, endedAt: 5))
        let report = MetricsReport(counts: metrics.counts, actions: ["backup", "secret"], live: [], storeUnavailable: false,
                                   connections: 0, version: "9", process: nil)
        let text = report.only { $0 == "backup" }.text
        for line in [
            "# TYPE baton_last_success_timestamp_seconds gauge",
            #"baton_last_success_timestamp_seconds{action="backup"} 1700000000.25"#,
            "# TYPE baton_last_run_timestamp_seconds gauge",
            #"baton_last_run_timestamp_seconds{action="backup",outcome="failure"} 1700000100"#,
            #"baton_last_run_timestamp_seconds{action="backup",outcome="success"} 1700000000.25"#,
            "# TYPE baton_failure_streak gauge",
            #"baton_failure_streak{action="backup"} 1"#,
        ] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "\(line)")
        }
        #expect(!text.contains("secret"))
        #expect(report.text.contains(#"baton_failure_streak{action="secret"} 1"#))
    }
}
