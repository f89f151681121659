import BatonCore
import BatonStore
import FoundationEssentials

/// `baton history`: past and current runs, newest first, filtered, as a table, JSON, NDJSON or CSV.
enum HistoryCommand {
    static let spec = CommandSpec(
        name: "history",
        abstract: """
            List runs, newest first. Works when batond is down, by reading the database file.
            """,
        arguments: "[ACTION]...",
        options: [
            OptionSpec(long: "action", short: "a", value: "NAME", help: "only runs of this action (repeatable)"),
            OptionSpec(long: "phase", short: nil, value: "PHASE", help: "only runs in this phase (repeatable): queued, loading, retrying, success, failure, cancelled"),
            OptionSpec(long: "since", short: nil, value: "WHEN", help: "only runs queued since WHEN: 30m, 2h, 7d, today, yesterday, 2026-11-01, 2026-11-01T14:00"),
            OptionSpec(long: "until", short: nil, value: "WHEN", help: "only runs queued before WHEN (same forms)"),
            OptionSpec(long: "param", short: "p", value: "NAME=VALUE", help: "only runs with this param value (repeatable)"),
            OptionSpec(long: "limit", short: "n", value: "N", help: "at most N runs (default 50)"),
            OptionSpec(long: "reverse", short: "r", value: nil, help: "oldest first"),
            OptionSpec(long: "format", short: nil, value: "FORMAT", help: "table (default), json, ndjson or csv"),
            OptionSpec(long: "json", short: nil, value: nil, help: "the same as --format json"),
            OptionSpec(long: "utc", short: nil, value: nil, help: "show times in UTC instead of local time"),
            OptionSpec(long: "denied", short: nil, value: nil, help: "list refused requests instead: who tried what (denied, or rate limited), and when (root only)"),
            OptionSpec(long: "events", short: nil, value: nil, help: "list the actions' pauses and resumes instead: who, why, until when"),
        ],
        run: run)

    enum OutputFormat: String, CaseIterable {
        case table, json, ndjson, csv
    }

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        let filter = try filter(arguments)
        var format = OutputFormat.table
        if let name = arguments.value("format") {
            guard let value = OutputFormat(rawValue: name) else {
                throw UsageError("baton history: --format expects table, json, ndjson or csv, got \(name)")
            }
            format = value
        }
        if arguments.flag("json") { format = .json }
        if arguments.flag("denied") {
            let records = try Query.denied(limit: filter.limit, context)
            if format == .json || format == .ndjson {
                print(format == .json ? Format.json(records) : records.map { Format.json($0, pretty: false) }.joined(separator: "\n"))
                return ExitCode.success
            }
            print(deniedTable(records, utc: arguments.flag("utc")), terminator: "")
            return ExitCode.success
        }
        if arguments.flag("events") {
            let events = try Query.events(filter, context)
            if format == .json || format == .ndjson {
                print(format == .json ? Format.json(events) : events.map { Format.json($0, pretty: false) }.joined(separator: "\n"))
                return ExitCode.success
            }
            print(eventsTable(events, utc: arguments.flag("utc")), terminator: "")
            return ExitCode.success
        }
        let runs = try Query.history(filter, context)
        print(render(runs, format: format, utc: arguments.flag("utc"), context: context, now: .now), terminator: "")
        return ExitCode.success
    }

    /// The filter the options describe.
    static func filter(_ arguments: ParsedArguments, now: Timestamp = .now, command: String = "history") throws -> HistoryFilter {
        var filter = HistoryFilter()
        filter.actions = arguments.positionals + arguments.all("action")
        for name in arguments.all("phase") {
            guard let phase = Phase(rawValue: name) else {
                throw UsageError("baton \(command): --phase expects one of \(Phase.allCases.map(\.rawValue).joined(separator: ", ")), got \(name)")
            }
            filter.phases.append(phase)
        }
        for (option, apply) in [("since", { (time: Timestamp) in filter.since = time }), ("until", { filter.until = $0 })] {
            guard let text = arguments.value(option) else { continue }
            do {
                apply(try TimeText.parse(text, now: now))
            } catch {
                throw UsageError("baton \(command): --\(option) \(error)")
            }
        }
        if let since = filter.since, let until = filter.until, until < since {
            throw UsageError("baton \(command): --until (\(Format.time(until))) is before --since (\(Format.time(since))): no run can match")
        }
        filter.params = try arguments.pairs("param", command: command)
        if let limit = arguments.value("limit") {
            guard let value = Int(limit), value >= 0, value <= 100_000 else {
                throw UsageError("baton \(command): --limit expects a number from 0 to 100000, got \(limit)")
            }
            filter.limit = value
        }
        filter.reverse = arguments.flag("reverse")
        return filter
    }

    static func render(_ runs: [RunSnapshot], format: OutputFormat, utc: Bool, context: Context, now: Timestamp,
                       width: Int? = Format.columns) -> String {
        switch format {
        case .json:
            return Format.json(runs) + "\n"
        case .ndjson:
            return runs.map { Format.json($0, pretty: false) + "\n" }.joined()
        case .csv:
            let header = "id,action,key,phase,policy,queued_at,started_at,ended_at,duration_s,attempts,exit_code,signal,reason,error,params\n"
            return header + runs.map { run in
                let duration = run.startedAt.map { start in
                    Format.printf("%.3f", Double((run.endedAt ?? now).rawValue - start.rawValue) / 1_000_000)
                } ?? ""
                let fields: [String] = [
                    String(run.id), run.action, run.key, run.phase.rawValue, run.policy.rawValue,
                    Format.isoTime(run.queuedAt, utc: utc), run.startedAt.map { Format.isoTime($0, utc: utc) } ?? "",
                    run.endedAt.map { Format.isoTime($0, utc: utc) } ?? "", duration, String(run.attempts),
                    run.exitCode.map(String.init) ?? "", run.signal.map(String.init) ?? "", run.reason ?? "", run.error ?? "",
                    run.params.isEmpty ? "" : Format.json(run.params, pretty: false),
                ]
                return fields.map(Format.csvField).joined(separator: ",") + "\n"
            }.joined()
        case .table:
            if runs.isEmpty { return "no runs match\n" }
            let runs = runs.map(\.forTerminal)
            var header = ["RUN", "ACTION", "PHASE", utc ? "QUEUED (UTC)" : "QUEUED", "TOOK", "ERROR"]
            var rows = runs.map { run -> [String] in
                [String(run.id), run.key, context.paint(Format.phaseWord(run), phase: run.phase), Format.time(run.queuedAt, utc: utc),
                 Format.duration(run, now: now), run.error ?? ""]
            }
            // Who pressed each run, once a run came from beyond the socket (a webhook's `via`).
            if runs.contains(where: { $0.via != nil }) {
                header.insert("BY", at: 2)
                rows = zip(runs, rows).map { run, row in Array(row[0...1]) + [Self.by(run)] + Array(row[2...]) }
            }
            // A fleet's history names the host of each run once more than one appears.
            if Set(runs.compactMap(\.host)).count > 1 {
                header.insert("HOST", at: 2)
                rows = zip(runs, rows).map { run, row in Array(row[0...1]) + [run.host ?? ""] + Array(row[2...]) }
            }
            return Format.table(header, rows, width: width)
        }
    }

    /// Who pressed a run, for the `BY` column: its `via` (a webhook), else its peer's user name.
    static func by(_ run: RunSnapshot) -> String {
        run.via ?? run.trigger.map { Format.userName($0.uid) } ?? ""
    }

    /// The refused requests as a table, as a terminal shows it.
    static func deniedTable(_ records: [TriggerRecord], utc: Bool, width: Int? = Format.columns) -> String {
        guard !records.isEmpty else { return "no refused requests\n" }
        let rows = records.map(\.forTerminal).map { record -> [String] in
            let approval = record.decision == .deniedApproval
            let tried = approval ? record.via ?? "approve or deny of run \(record.runID ?? 0)" : Self.tried(record.decision)
            return [Format.time(record.at, utc: utc), who(record, approval: approval), tried, record.action.isEmpty ? "-" : record.action]
        }
        return Format.table(["TIME", "WHO", "TRIED", "ACTION"], rows, width: width)
    }

    /// Who was refused: the person a group principal's `via` names (not for a refused approval, whose
    /// `via` says what was tried), else the peer's user name, uid and pid.
    static func who(_ record: TriggerRecord, approval: Bool) -> String {
        let peer = record.peer.map(Format.caller) ?? "?"
        return approval ? peer : Format.principal(record.peer, via: record.via) ?? peer
    }

    /// The pauses and resumes as a table: when, which action, what, who, and the pause's end and reason.
    static func eventsTable(_ events: [ActionEvent], utc: Bool, width: Int? = Format.columns) -> String {
        guard !events.isEmpty else { return "no pauses or resumes\n" }
        let rows = events.map { event in
            [Format.time(event.at, utc: utc), Terminal.visible(event.action), event.what, Terminal.visible(event.by),
             event.event == .resumed ? "-" : event.until.map { Format.time($0, utc: utc) } ?? "resumed by hand",
             Terminal.visible(event.reason ?? "")]
        }
        return Format.table(["TIME", "ACTION", "EVENT", "BY", "UNTIL", "REASON"], rows, width: width)
    }

    /// What a refused request tried: `trigger`, `cancel`, `admin`.
    static func tried(_ decision: TriggerRecord.Decision) -> String {
        if case let .denied(permission) = decision { return permission.rawValue }
        return decision.description
    }
}
