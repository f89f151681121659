import BatonCore

extension ConfigReader {
    /// `schedule: "*-*-* 03:00:00"` or a list of them (systemd's `OnCalendar=` syntax),
    /// `scheduleJitter: "5m"` and `catchUp: true`: each expression is checked by
    /// `systemd-analyze calendar`; without it the schedule is refused, never guessed at.
    mutating func schedule(_ fields: [String: JSONValue], into action: inout Action, at: String) {
        if let value = fields["schedule"] {
            let expressions: [String]? = if case .array = value { stringArray(value, at: "\(at).schedule") } else {
                string(value, at: "\(at).schedule").map { [$0] }
            }
            for (index, expression) in (expressions ?? []).enumerated() {
                let path = expressions?.count == 1 && !isArray(value) ? "\(at).schedule" : "\(at).schedule[\(index)]"
                if checkCalendar(expression, at: path) { action.schedules.append(expression) }
            }
            if case .array([]) = value { fail("\(at).schedule", "is empty: give a calendar expression such as \"*-*-* 03:00:00\", or leave schedule out") }
        }
        if let value = fields["scheduleJitter"] {
            action.scheduleJitter = duration(value, at: "\(at).scheduleJitter")
            if fields["schedule"] == nil { fail("\(at).scheduleJitter", "needs schedule: it delays the schedule's firings") }
        }
        if let value = fields["catchUp"] {
            if case let .bool(flag) = value { action.catchUp = flag } else { fail("\(at).catchUp", "expected true or false, got \(value.kind)") }
            if fields["schedule"] == nil { fail("\(at).catchUp", "needs schedule: it runs a firing the schedule missed") }
        }
        if !action.schedules.isEmpty, !bootedWithSystemd {
            warn("\(at).schedule", "schedules need systemd, which is not the init system here: nothing will fire them. " +
                 "Call `baton run \(action.name) --scheduled=TIME` from cron instead (see README, Schedules)")
        }
    }

    private func isArray(_ value: JSONValue) -> Bool { if case .array = value { true } else { false } }

    /// Whether systemd-analyze takes the expression; a problem naming the field when it does not.
    private mutating func checkCalendar(_ expression: String, at path: String) -> Bool {
        guard let analyzer = calendarAnalyzer else {
            fail(path, "schedules need systemd: systemd-analyze, which checks \(Action.quoted(expression)), is not installed. " +
                 "Without systemd, leave schedule out and call `baton run ACTION --scheduled=TIME` from cron (see README, Schedules)")
            return false
        }
        do {
            _ = try SystemdCalendar.elapses(expression, after: .now, analyzer: analyzer)
            return true
        } catch {
            fail(path, "\(Action.quoted(expression)) is not a systemd calendar expression (OnCalendar=): \(error.message)")
            return false
        }
    }
}
