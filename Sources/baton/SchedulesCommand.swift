import BatonClient
import BatonCore

/// `baton schedules`: each action's schedules, when they fire next, and the last slot that ran.
enum SchedulesCommand {
    static let spec = CommandSpec(
        name: "schedules",
        abstract: """
            List each action's schedules with their next firing and the last slot that ran. The next firing is \
            systemd-analyze's (what `systemctl list-timers` shows); the last slot names the run it made and its phase.
            """,
        arguments: "",
        options: [OptionSpec(long: "json", short: nil, value: nil, help: "print the schedules as JSON")],
        run: run)

    /// One action's schedules as listed.
    struct Row: Encodable, Equatable {
        var action: String
        var schedules: [String]
        var next: Timestamp?
        var lastSlot: Timestamp?
        var run: Int64?
        var phase: Phase?
    }

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let now = Timestamp.now
        let scheduled = try context.ask(.actions).filter { !($0.schedules ?? []).isEmpty }
        let rows = try scheduled.map { action -> Row in
            let runs = try context.ask(.history(HistoryFilter(actions: [action.name], limit: SlotBook.kept)))
            return row(action, next: next(action.schedules ?? [], after: now), runs: runs)
        }
        if arguments.flag("json") { print(Format.json(rows)) } else { print(table(rows), terminator: "") }
        return ExitCode.success
    }

    /// The row of `action`: the run with the latest slot among `runs` (newest first or not).
    static func row(_ action: ActionInfo, next: Timestamp?, runs: [RunSnapshot]) -> Row {
        let last = runs.filter { $0.slot != nil }.max { $0.slot! < $1.slot! }
        return Row(action: action.name, schedules: action.schedules ?? [], next: next, lastSlot: last?.slot, run: last?.id,
                   phase: last?.phase)
    }

    /// The earliest next firing of any of the expressions; nil where systemd-analyze cannot say.
    static func next(_ schedules: [String], after now: Timestamp) -> Timestamp? {
        schedules.compactMap { try? SystemdCalendar.elapses($0, after: now).first }.min()
    }

    static func table(_ rows: [Row], width: Int = Format.terminalWidth) -> String {
        let cells = rows.map { row -> [String] in
            [Terminal.visible(row.action), Terminal.visible(row.schedules.joined(separator: "; ")), row.next.map { Format.time($0) } ?? "-",
             row.lastSlot.map { Format.time($0) } ?? "-", row.run.map(String.init) ?? "-", row.phase?.rawValue ?? "-"]
        }
        return Format.table(["ACTION", "SCHEDULE", "NEXT", "LAST SLOT", "RUN", "PHASE"], cells, width: width)
    }
}
