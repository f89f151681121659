import BatonCore
@testable import baton
import Foundation
import Testing

@Suite("baton run --scheduled: times and slots")
struct ScheduledTimeTests {
    static let t = Timestamp(rawValue: 1_764_561_600_000_000)  // 2025-12-01T04:00:00Z

    @Test("TIME forms", arguments: [
        ("@1764561600", t), ("@1764561600123456us", Timestamp(rawValue: 1_764_561_600_123_456)),
        ("2025-12-01T04:00:00Z", t), ("2025-12-01T04:00Z", t), ("2025-12-01 05:30:00+01:30", t), ("2025-11-30T23:00:00-05:00", t),
        ("@0", nil), ("@-5", nil), ("@12us3", nil), ("tomorrow", nil), ("2025-13-01T04:00:00Z", nil), ("2025-12-01", nil), ("", nil),
    ] as [(String, Timestamp?)])
    func parse(text: String, expected: Timestamp?) {
        #expect(ScheduledTime.parse(text) == expected)
        #expect(ScheduledTime.parse("now", now: Self.t) == Self.t)
    }

    @Test("the latest firing at or before the timer's time is the slot; an unscheduled time is cut to the second")
    func picking() {
        let s = { (seconds: Int64) in Timestamp(rawValue: Self.t.rawValue + seconds * 1_000_000) }
        #expect(ScheduleSlot.latest([s(-10), s(-5), s(0), s(5)], notAfter: s(0) + .milliseconds(300)) == s(0))
        #expect(ScheduleSlot.latest([s(5)], notAfter: s(0)) == nil)
        #expect(ScheduleSlot.latest([], notAfter: s(0)) == nil)
        #expect(ScheduleSlot.truncated(Timestamp(rawValue: Self.t.rawValue + 999_999)) == Self.t)
        #expect(ScheduleSlot.windows(jitter: .seconds(300)).first == .seconds(310))
    }

    @Test("systemd-analyze's listing in UTC, and never")
    func listing() {
        let output = """
              Original form: *:*:0/5
            Normalized form: *-*-* *:*:00/5
                Next elapse: Mon 2025-12-01 04:00:05 UTC
                   From now: 1 year 0 months ago
                   Iter. #2: Mon 2025-12-01 04:00:10 UTC
            """
        #expect(SystemdCalendar.parse(output) == [Self.t + .seconds(5), Self.t + .seconds(10)])
        #expect(SystemdCalendar.parse("Normalized form: 2001-01-01 00:00:00\n    Next elapse: never\n").isEmpty)
    }

    @Test("a timer that fired late or jittered finds its slot; with catch-up, long after it",
          .enabled(if: SystemdCalendar.analyzer != nil))
    func slotOfFiring() throws {
        let every5 = try ScheduleSlot.slot(fired: Self.t + .seconds(5) + .milliseconds(400), schedules: ["*:*:0/5"], jitter: nil)
        #expect(every5 == Self.t + .seconds(5))
        let nightly = try ScheduleSlot.slot(fired: Self.t + .seconds(170 - 3_600), schedules: ["*-*-* 03:00:00"], jitter: .seconds(300))
        #expect(nightly == Self.t + .seconds(-3_600))
        let caughtUp = try ScheduleSlot.slot(fired: Self.t + .seconds(5 * 3_600), schedules: ["*-*-* 03:00:00"], jitter: nil)
        #expect(caughtUp == Self.t + .seconds(-3_600))
        #expect(try ScheduleSlot.slot(fired: Self.t, schedules: ["2001-01-01"], jitter: nil) == nil)
    }

    @Test("schedules list the run of the latest slot")
    func rows() {
        var a = RunSnapshot(id: 3, action: "b", key: "b", phase: .success, policy: .reject, params: [:], trigger: nil, queuedAt: Self.t)
        a.slot = Self.t
        var b = a
        b.id = 4
        b.slot = Self.t + .seconds(60)
        b.phase = .failure
        let plain = RunSnapshot(id: 9, action: "b", key: "b", phase: .success, policy: .reject, params: [:], trigger: nil, queuedAt: Self.t)
        var info = ActionInfo(name: "b", description: nil, exec: [], policy: .reject, policies: [], timeout: nil, params: [:], keyParams: [])
        info.schedules = ["*:0/1"]
        let timer = TimerState(unit: "baton-schedule-b.timer", load: "loaded", active: "active", sub: "waiting", result: "success",
                               next: Self.t + .seconds(120), lastTrigger: Self.t + .seconds(60))
        let row = SchedulesCommand.row(info, timer: timer, runs: [plain, b, a])
        #expect(row == SchedulesCommand.Row(action: "b", schedules: ["*:0/1"], timer: timer, next: Self.t + .seconds(120),
                                            lastTrigger: Self.t + .seconds(60), lastSlot: b.slot, run: 4, phase: .failure))
        let bare = SchedulesCommand.row(info, timer: nil, runs: [plain])
        #expect(bare.run == nil && bare.next == nil && bare.timer == nil)
    }
}
