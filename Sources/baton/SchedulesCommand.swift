import BatonClient
import BatonCore
import FoundationEssentials

/// `baton schedules`: each action's schedules, its timer as systemd reports it, and the last slot that ran.
enum SchedulesCommand {
    static let spec = CommandSpec(
        name: "schedules",
        abstract: """
            List each action's schedules, its timer's state and times, and the last slot that ran. The timer's state \
            (active, inactive, failed, not loaded), when it elapses next and when it last elapsed are systemd's (systemctl \
            show), not computed; the last slot names the run it made and its phase. Where systemd is not the init system \
            no timer fires the schedules, and the list says so.
            """,
        arguments: "",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the schedules as JSON")],
        run: run)

    /// One action's schedules as listed.
    struct Row: Encodable, Equatable {
        var action: String
        var schedules: [String]
        /// The timer as systemd reports it; nil where systemd is not running or did not answer.
        var timer: TimerState?
        var next: Timestamp?
        var lastTrigger: Timestamp?
        var lastSlot: Timestamp?
        var run: Int64?
        var phase: Phase?
    }

    static let notUnderSystemd = "systemd is not the init system here: no timer fires these schedules"

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let scheduled = try context.ask(.actions).filter { !($0.schedules ?? []).isEmpty }
        let systemd = SystemdUnits.underSystemd
        let timers = systemd ? SystemdUnits.timers(scheduled.map { TimerPlan.unit($0.name) }) : nil
        let rows = try scheduled.map { action -> Row in
            let runs = try context.ask(.history(HistoryFilter(actions: [action.name], limit: SlotBook.kept)))
            return row(action, timer: timers?.first { $0.unit == TimerPlan.unit(action.name) }, runs: runs)
        }
        if arguments.flag("json") {
            print(Format.json(rows))
        } else {
            print(table(rows), terminator: "")
            if !systemd && !rows.isEmpty { Stdio.error.write(Data("note: \(notUnderSystemd)\n".utf8)) }
            if systemd && timers == nil { Stdio.error.write(Data("warning: systemctl show did not answer: the timers' states are unknown\n".utf8)) }
        }
        return ExitCode.success
    }

    /// The row of `action`: its timer's times, and the run with the latest slot among `runs` (newest first or not).
    static func row(_ action: ActionInfo, timer: TimerState?, runs: [RunSnapshot]) -> Row {
        let last = runs.filter { $0.slot != nil }.max { $0.slot! < $1.slot! }
        return Row(action: action.name, schedules: action.schedules ?? [], timer: timer, next: timer?.next, lastTrigger: timer?.lastTrigger,
                   lastSlot: last?.slot, run: last?.id, phase: last?.phase)
    }

    static func table(_ rows: [Row], width: Int = Format.terminalWidth) -> String {
        let cells = rows.map { row -> [String] in
            [Terminal.visible(row.action), Terminal.visible(row.schedules.joined(separator: "; ")), row.timer?.summary ?? "-",
             row.next.map { Format.time($0) } ?? "-", row.lastTrigger.map { Format.time($0) } ?? "-",
             row.lastSlot.map { Format.time($0) } ?? "-", row.run.map(String.init) ?? "-", row.phase?.rawValue ?? "-"]
        }
        return Format.table(["ACTION", "SCHEDULE", "TIMER", "NEXT", "LAST TRIGGER", "LAST SLOT", "RUN", "PHASE"], cells, width: width)
    }
}
