import BatonCore
@testable import baton
import Testing

/// `baton schedules` reads each timer's state from `systemctl show --timestamp=unix`.
@Suite("baton schedules: the timers' states from systemctl show")
struct TimerStateTests {
    static func timer(_ unit: String, _ load: String, _ active: String, _ sub: String, _ result: String = "success",
                      next: Int64? = nil, last: Int64? = nil) -> TimerState {
        TimerState(unit: unit, load: load, active: active, sub: sub, result: result, next: next.map { Timestamp(rawValue: $0 * 1_000_000) },
                   lastTrigger: last.map { Timestamp(rawValue: $0 * 1_000_000) })
    }

    @Test("systemctl show output, a block per unit", arguments: [
        ("armed, elapsed before", """
            Id=baton-schedule-tick.timer
            LoadState=loaded
            ActiveState=active
            SubState=waiting
            Result=success
            NextElapseUSecRealtime=@1764561605
            LastTriggerUSec=@1764561600
            """, [timer("baton-schedule-tick.timer", "loaded", "active", "waiting", next: 1_764_561_605, last: 1_764_561_600)]),
        ("never elapsed; a loaded but stopped one; a failed one (keys in another order); one systemd has no file of", """
            Id=baton-schedule-a.timer
            LoadState=loaded
            ActiveState=active
            SubState=waiting
            Result=success
            NextElapseUSecRealtime=@1764565200
            LastTriggerUSec=

            Id=baton-schedule-b.timer
            LoadState=loaded
            ActiveState=inactive
            SubState=dead
            Result=success
            NextElapseUSecRealtime=
            LastTriggerUSec=n/a

            Result=resources
            Id=baton-schedule-c.timer
            ActiveState=failed
            SubState=failed
            LoadState=loaded

            Id=baton-schedule-gone.timer
            LoadState=not-found
            ActiveState=inactive
            SubState=dead
            Result=success

            """, [timer("baton-schedule-a.timer", "loaded", "active", "waiting", next: 1_764_565_200),
                  timer("baton-schedule-b.timer", "loaded", "inactive", "dead"),
                  timer("baton-schedule-c.timer", "loaded", "failed", "failed", "resources"),
                  timer("baton-schedule-gone.timer", "not-found", "inactive", "dead")]),
        ("nothing, or a block without Id", "", []),
        ("a block without Id", "LoadState=loaded\nActiveState=active\n", []),
        ("times as systemd 252 prints them under TZ=UTC", """
            Id=baton-schedule-tick.timer
            LoadState=loaded
            ActiveState=active
            SubState=waiting
            Result=success
            NextElapseUSecRealtime=Mon 2025-12-01 04:00:05 UTC
            LastTriggerUSec=Mon 2025-12-01 04:00:00 UTC
            """, [timer("baton-schedule-tick.timer", "loaded", "active", "waiting", next: 1_764_561_605, last: 1_764_561_600)]),
        ("a time in another zone is not guessed at", "Id=x.timer\nNextElapseUSecRealtime=Mon 2025-12-01 05:00:05 CET\nLastTriggerUSec=Mon 2025-12-01\n",
         [timer("x.timer", "", "", "", "")]),
        ("a value holding =, a time that is not @seconds", "Id=x.timer\nLoadState=loaded\nActiveState=active\nSubState=a=b\nNextElapseUSecRealtime=2026-12-04 20:45:00\n",
         [timer("x.timer", "loaded", "active", "a=b", "")]),
    ] as [(String, String, [TimerState])])
    func parse(_ story: String, output: String, expected: [TimerState]) {
        #expect(TimerState.parse(output) == expected, "\(story)")
    }

    @Test("the state column: active (waiting), inactive (dead), failed with its result, not loaded")
    func summary() {
        #expect(Self.timer("a", "loaded", "active", "waiting").summary == "active (waiting)")
        #expect(Self.timer("a", "loaded", "inactive", "dead").summary == "inactive (dead)")
        #expect(Self.timer("a", "loaded", "failed", "failed", "resources").summary == "failed (resources)")
        #expect(Self.timer("a", "not-found", "inactive", "dead").summary == "not loaded")
    }
}
