import BatonCore

/// What `baton reload` asks of systemd, after `systemctl daemon-reload` wrote the new timers, so
/// that they follow the config: systemd neither starts a timer newly wanted by timers.target nor
/// stops one whose unit file is gone, and a timer whose schedule changed is restarted so that it
/// is armed from its new expressions. Made from the actions before and after the reload.
struct TimerPlan: Equatable {
    /// Actions that gained schedules: their timers are started.
    var start: [String] = []
    /// Actions whose schedules, jitter or catch-up changed: their timers are restarted.
    var restart: [String] = []
    /// Actions that lost their schedules (or were removed): their timers are stopped.
    var stop: [String] = []

    /// What a timer is made of: two actions with the same signature have the same timer.
    struct Signature: Equatable {
        var schedules: [String]
        var jitter: Int64?
        var catchUp: Bool
    }

    init(start: [String] = [], restart: [String] = [], stop: [String] = []) {
        self.start = start
        self.restart = restart
        self.stop = stop
    }

    /// The plan between the actions `before` and `after` a reload (an action without schedules has no timer).
    init(before: [ActionInfo], after: [ActionInfo]) {
        let old = Self.timers(before), new = Self.timers(after)
        for (name, signature) in new.sorted(by: { $0.key < $1.key }) {
            if let previous = old[name] {
                if previous != signature { restart.append(name) }
            } else {
                start.append(name)
            }
        }
        stop = old.keys.filter { new[$0] == nil }.sorted()
    }

    /// Whether some action's timer changed.
    var isEmpty: Bool { start.isEmpty && restart.isEmpty && stop.isEmpty }

    /// The timer unit of `action`, as the generator names it.
    static func unit(_ action: String) -> String { "baton-schedule-\(action).timer" }

    /// Each scheduled action's timer signature, by name.
    static func timers(_ actions: [ActionInfo]) -> [String: Signature] {
        var timers: [String: Signature] = [:]
        for action in actions {
            guard let schedules = action.schedules, !schedules.isEmpty else { continue }
            timers[action.name] = Signature(schedules: schedules, jitter: action.scheduleJitter, catchUp: action.catchUp ?? false)
        }
        return timers
    }

    /// One line per change, as `baton reload` prints them: `started baton-schedule-tick.timer`.
    var lines: [String] {
        start.map { "started \(Self.unit($0))" } + restart.map { "restarted \(Self.unit($0))" } + stop.map { "stopped \(Self.unit($0))" }
    }
}
