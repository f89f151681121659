@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: schedule, scheduleJitter and catchUp")
struct ScheduleConfigTests {
    static let analyzer = SystemdCalendar.analyzer

    func reader(analyzer: String?, booted: Bool) -> ConfigReader {
        var reader = ConfigReader()
        reader.calendarAnalyzer = analyzer
        reader.bootedWithSystemd = booted
        reader.runsAsRoot = false  // these tests are about schedules, not whom actions run as (RequireUserTests)
        return reader
    }

    func parse(_ text: String, analyzer: String? = Self.analyzer, booted: Bool = true) throws(ConfigError) -> Config {
        try Config.parse(Data(text.utf8), file: "t.json5", reader: reader(analyzer: analyzer, booted: booted))
    }

    func problems(_ text: String, analyzer: String? = Self.analyzer) -> [String] {
        do throws(ConfigError) {
            _ = try parse(text, analyzer: analyzer)
            return []
        } catch {
            return error.problems.map { "\($0.path): \($0.message)" }
        }
    }

    @Test("one expression or a list, with jitter and catch-up; none by default", .enabled(if: analyzer != nil))
    func parsed() throws {
        let config = try parse(#"""
            { actions: { backup: { exec: ["true"], schedule: "*-*-* 03:00:00", scheduleJitter: "5m", catchUp: true },
                         twice: { exec: ["true"], schedule: ["Mon *-*-* 09:00", "*:*:0/5"] }, plain: { exec: ["true"] } } }
            """#)
        let backup = try #require(config.actions.first { $0.name == "backup" })
        #expect(backup.schedules == ["*-*-* 03:00:00"] && backup.scheduleJitter == .seconds(300) && backup.catchUp)
        #expect(config.actions.first { $0.name == "twice" }?.schedules == ["Mon *-*-* 09:00", "*:*:0/5"])
        let plain = try #require(config.actions.first { $0.name == "plain" })
        #expect(plain.schedules.isEmpty && plain.scheduleJitter == nil && !plain.catchUp)
        #expect(config.warnings.isEmpty)
    }

    @Test("a bad expression is refused naming its field and what systemd-analyze said", .enabled(if: analyzer != nil))
    func badExpression() {
        let found = problems(#"{ actions: { b: { exec: ["true"], schedule: ["daily", "at three"] } } }"#)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix(#"actions.b.schedule[1]: "at three" is not a systemd calendar expression (OnCalendar=): systemd-analyze refused it: Failed to parse calendar specification"#) == true)
        #expect(problems(#"{ actions: { b: { exec: ["true"], schedule: 3 } } }"#) == ["actions.b.schedule: expected a string, got a number"])
    }

    @Test("jitter and catchUp need a schedule; catchUp is a boolean", .enabled(if: analyzer != nil))
    func needsSchedule() {
        #expect(problems(#"{ actions: { b: { exec: ["true"], scheduleJitter: "1m" } } }"#)
            == ["actions.b.scheduleJitter: needs schedule: it delays the schedule's firings"])
        #expect(problems(#"{ actions: { b: { exec: ["true"], schedule: "daily", catchUp: "yes" } } }"#)
            == ["actions.b.catchUp: expected true or false, got a string"])
    }

    @Test("without systemd-analyze a schedule is refused, saying schedules need systemd and pointing at cron")
    func withoutSystemd() {
        let found = problems(#"{ actions: { b: { exec: ["true"], schedule: "daily" } } }"#, analyzer: nil)
        #expect(found == [#"actions.b.schedule: schedules need systemd: systemd-analyze, which checks "daily", is not installed. Without systemd, leave schedule out and call `baton run ACTION --scheduled=TIME` from cron (see README, Schedules)"#])
    }

    @Test("with systemd-analyze but systemd not the init system, the config loads with a warning", .enabled(if: analyzer != nil))
    func notBooted() throws {
        let config = try parse(#"{ actions: { b: { exec: ["true"], schedule: "daily" } } }"#, booted: false)
        #expect(config.warnings.count == 1)
        #expect(config.warnings.first?.contains("actions.b.schedule: schedules need systemd, which is not the init system here") == true)
    }
}
