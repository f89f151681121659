import BatonCore

/// The systemd units of an action's schedules, as text: a timer that fires at each of its
/// calendar expressions and a oneshot service that runs `baton run ACTION --scheduled=now`.
/// Nothing systemd gives the service is the slot: `$TRIGGER_TIMER_REALTIME_USEC`, where it is
/// set, is when the timer elapsed, not the calendar time it elapsed for, and under Debian 12's systemd
/// 252 the service saw the first firing's time at every later firing (PackageTests caught it). So
/// baton computes the slot itself: the latest firing of the schedule at or before the service's
/// start (`ScheduleSlot`), which the jitter and the start delay do not change.
enum ScheduleUnits {
    /// A unit file: its name in the generator's directory and its text.
    struct Unit: Equatable {
        var name: String
        var text: String
    }

    /// `baton-schedule-ACTION`: action names are letters, digits, `-`, `_` and `.`, all legal in unit names.
    static func stem(_ action: String) -> String { "baton-schedule-\(action)" }

    /// The timer and service of `action`, when it has schedules; none otherwise.
    static func units(_ action: Action, config: String, baton: String, socket: String?) -> [Unit] {
        guard !action.schedules.isEmpty else { return [] }
        let header = """
            # Written by baton-schedule-generator from \(config): change the action's schedule there
            # and run `sudo baton reload` (or systemctl reload batond); edits here are lost.
            """
        var timer = header + "\n[Unit]\nDescription=Baton schedule of \(action.name)\nDocumentation=man:baton.json5(5)\nSourcePath=\(config)\n\n[Timer]\n"
        for expression in action.schedules { timer += "OnCalendar=\(escape(expression))\n" }
        // One second, not systemd's default minute: the slot is found from when the timer elapsed.
        timer += "AccuracySec=1s\n"
        if let jitter = action.scheduleJitter, jitter > .zero { timer += "RandomizedDelaySec=\(jitter.microseconds)us\n" }
        if action.catchUp { timer += "Persistent=true\n" }
        timer += "Unit=\(stem(action.name)).service\n"
        let socketOption = socket.map { " --socket \(quoted($0))" } ?? ""
        let service = header + """

            [Unit]
            Description=Baton: scheduled run of \(action.name)
            Documentation=man:baton(1)
            SourcePath=\(config)
            After=batond.service batond.socket
            Wants=batond.socket

            [Service]
            Type=oneshot
            ExecStart=\(quoted(baton))\(socketOption) run \(action.name) --scheduled=now

            """
        return [Unit(name: "\(stem(action.name)).timer", text: timer), Unit(name: "\(stem(action.name)).service", text: service)]
    }

    /// A value for a unit file: `%` doubled (a specifier otherwise), and a backslash kept as one.
    static func escape(_ text: String) -> String {
        text.replacingEvery("\\", with: "\\\\").replacingEvery("%", with: "%%")
    }

    /// A word of `ExecStart=`: in double quotes when it holds a space or a quote, `$` and `%` escaped.
    static func quoted(_ word: String) -> String {
        let escaped = escape(word).replacingEvery("$", with: "$$")
        guard escaped.contains(where: { $0 == " " || $0 == "\"" || $0 == "'" }) else { return escaped }
        return "\"" + escaped.replacingEvery("\"", with: "\\\"") + "\""
    }
}
