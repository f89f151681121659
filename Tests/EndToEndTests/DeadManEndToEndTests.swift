import Foundation
import Testing

/// The dead-man series with real runs and a restart, and docs/alerts.yml under promtool.
@Suite("End to end: dead-man metrics and alert rules", .serialized, .offPool)
struct DeadManEndToEndTests {
    static let config = """
        {
          socketMode: "0666",
          actions: {
            backup: { exec: ["true"] },
            flaky: { exec: ["sh", "-c", "exit 3"] },
          },
        }
        """

    static var alerts: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/alerts.yml").standardized.path
    }

    @Test("last success, last run by outcome and the failure streak follow real runs, and a restarted batond reports them from the history")
    func survivesRestart() throws {
        let before = Date().timeIntervalSince1970
        let first = try Daemon(config: Self.config)
        #expect(try first.baton("run", "flaky").code == 1)
        #expect(try first.baton("run", "backup").code == 0)
        for _ in 0..<3 { #expect(try first.baton("run", "flaky").code == 1) }
        let after = Date().timeIntervalSince1970
        let seen = try first.baton("metrics").stdout
        let success = try #require(MetricsEndToEndTests.value(seen, #"baton_last_success_timestamp_seconds{action="backup"}"#))
        #expect(success >= before - 1 && success <= after + 1)
        let failed = try #require(MetricsEndToEndTests.value(seen, #"baton_last_run_timestamp_seconds{action="flaky",outcome="failure"}"#))
        #expect(failed >= success && failed <= after + 1)
        #expect(MetricsEndToEndTests.value(seen, #"baton_failure_streak{action="flaky"}"#) == 4)
        #expect(MetricsEndToEndTests.value(seen, #"baton_failure_streak{action="backup"}"#) == 0)
        #expect(MetricsEndToEndTests.value(seen, #"baton_last_success_timestamp_seconds{action="flaky"}"#) == nil)
        first.stop()

        let second = try Daemon(config: Self.config, reusing: first)
        let text = try second.baton("metrics").stdout
        for series in [#"baton_last_success_timestamp_seconds{action="backup"}"#,
                       #"baton_last_run_timestamp_seconds{action="backup",outcome="success"}"#,
                       #"baton_last_run_timestamp_seconds{action="flaky",outcome="failure"}"#,
                       #"baton_failure_streak{action="flaky"}"#, #"baton_failure_streak{action="backup"}"#] {
            let was = MetricsEndToEndTests.value(seen, series), now = MetricsEndToEndTests.value(text, series)
            #expect(now != nil && abs((now ?? 0) - (was ?? 0)) < 1e-5, "\(series): \(String(describing: now)) after the restart, \(String(describing: was)) before")
        }
        #expect(try second.baton("run", "backup").code == 0)
        #expect(try second.baton("run", "flaky").code == 1)
        let later = try second.baton("metrics").stdout
        #expect(MetricsEndToEndTests.value(later, #"baton_failure_streak{action="flaky"}"#) == 5)
        #expect((MetricsEndToEndTests.value(later, #"baton_last_success_timestamp_seconds{action="backup"}"#) ?? 0) > success)
    }

    @Test("docs/alerts.yml passes promtool check rules")
    func rulesCheck() throws {
        let check = try execute("/usr/bin/promtool", ["check", "rules", Self.alerts])
        #expect(check.code == 0, "promtool: \(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("3 rules found"), "\(check.stdout)")
    }

    /// The rules evaluated by promtool on synthetic series: a backup that succeeded at 0 and
    /// then only failed, evaluated before and after 26 h, and a streak that reaches 3.
    @Test("the alerts fire as documented: backup silent past 26 h, a failure streak of 3, not before")
    func rulesFire() throws {
        let directory = NSTemporaryDirectory() + "baton-alerts-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
            rule_files: [\(Self.alerts)]
            evaluation_interval: 1h
            tests:
              - interval: 1h
                input_series:
                  - series: 'baton_last_success_timestamp_seconds{action="backup"}'
                    values: '0x30'
                  - series: 'baton_failure_streak{action="backup"}'
                    values: '0 1 2 3 3 0'
                alert_rule_test:
                  - { eval_time: 25h, alertname: BatonBackupNotSucceeded, exp_alerts: [] }
                  - eval_time: 27h
                    alertname: BatonBackupNotSucceeded
                    exp_alerts:
                      - exp_labels: { action: backup, severity: page }
                        exp_annotations:
                          summary: "backup has not succeeded for 26 h"
                          description: "The last success of backup ended 1d 3h 0m 0s ago."
                  - { eval_time: 2h, alertname: BatonFailureStreak, exp_alerts: [] }
                  - eval_time: 3h
                    alertname: BatonFailureStreak
                    exp_alerts:
                      - exp_labels: { action: backup, severity: warning }
                        exp_annotations:
                          summary: "backup has failed 3 times in a row"
                          description: "baton history --action backup shows the failures; baton show RUN the output."
                  - { eval_time: 5h, alertname: BatonFailureStreak, exp_alerts: [] }
                  - { eval_time: 27h, alertname: BatonBackupNeverSucceeded, exp_alerts: [] }
            """.write(toFile: directory + "/tests.yml", atomically: true, encoding: .utf8)
        let test = try execute("/usr/bin/promtool", ["test", "rules", directory + "/tests.yml"])
        #expect(test.code == 0, "promtool: \(test.stdout) \(test.stderr)")
    }
}
