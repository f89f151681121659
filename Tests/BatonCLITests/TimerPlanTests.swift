import BatonCore
@testable import baton
import Testing

/// What `baton reload` asks of systemd after daemon-reload: which timers start, restart and stop.
@Suite("baton reload: the timers that follow the config")
struct TimerPlanTests {
    static func action(_ name: String, _ schedules: [String]? = nil, jitter: Int64? = nil, catchUp: Bool? = nil) -> ActionInfo {
        var info = ActionInfo(name: name, description: nil, exec: ["true"], policy: .reject, policies: [], timeout: nil, params: [:], keyParams: [])
        info.schedules = schedules
        info.scheduleJitter = jitter
        info.catchUp = catchUp
        return info
    }

    static let tick = action("tick", ["*:*:0/5"])

    @Test("the plan between the actions before and after a reload", arguments: [
        ("nothing scheduled changes", [tick], [tick, action("plain")], TimerPlan()),
        ("an action without a schedule added, removed or changed", [tick, action("a")], [tick, action("b"), action("c", [])], TimerPlan()),
        ("a schedule added to an action", [action("a")], [action("a", ["daily"])], TimerPlan(start: ["a"])),
        ("a scheduled action added", [tick], [tick, action("new", ["daily"])], TimerPlan(start: ["new"])),
        ("an expression changed", [tick], [action("tick", ["*:*:0/10"])], TimerPlan(restart: ["tick"])),
        ("an expression added", [tick], [action("tick", ["*:*:0/5", "daily"])], TimerPlan(restart: ["tick"])),
        ("the jitter changed", [tick], [action("tick", ["*:*:0/5"], jitter: 1_000_000)], TimerPlan(restart: ["tick"])),
        ("catch-up turned on", [tick], [action("tick", ["*:*:0/5"], catchUp: true)], TimerPlan(restart: ["tick"])),
        ("the schedule removed", [tick], [action("tick")], TimerPlan(stop: ["tick"])),
        ("the action removed", [tick, action("b", ["daily"])], [action("b", ["daily"])], TimerPlan(stop: ["tick"])),
        ("all at once, each list sorted", [action("z", ["daily"]), action("y", ["daily"]), action("k", ["daily"])],
         [action("k", ["weekly"]), action("b", ["daily"]), action("a", ["daily"])], TimerPlan(start: ["a", "b"], restart: ["k"], stop: ["y", "z"])),
        ("nothing known before: every timer starts", [], [tick, action("plain")], TimerPlan(start: ["tick"])),
    ] as [(String, [ActionInfo], [ActionInfo], TimerPlan)])
    func plan(_ story: String, before: [ActionInfo], after: [ActionInfo], expected: TimerPlan) {
        #expect(TimerPlan(before: before, after: after) == expected, "\(story)")
        #expect(TimerPlan(before: before, after: after).isEmpty == (expected == TimerPlan()), "\(story)")
    }

    @Test("the lines baton reload prints name each unit and what was done to it")
    func lines() {
        let plan = TimerPlan(start: ["a"], restart: ["b"], stop: ["c"])
        #expect(plan.lines == ["started baton-schedule-a.timer", "restarted baton-schedule-b.timer", "stopped baton-schedule-c.timer"])
    }
}
