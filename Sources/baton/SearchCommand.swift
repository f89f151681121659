import BatonCore
import FoundationEssentials

/// `baton search TEXT [ACTION]...`: the runs whose kept output or param values hold a text.
enum SearchCommand {
    static let spec = CommandSpec(
        name: "search",
        abstract: """
            Find the runs whose output holds TEXT. Newest first, each with its matching lines and their numbers;
            case ignored; param values are searched too. Any three characters or more are looked up in the
            history's index where it keeps one (search: "index" in batond's config); otherwise the newest
            256 MiB of kept output are read. Works when batond is down.
            """,
        arguments: "TEXT [ACTION]...",
        options: [
            OptionSpec(long: "phase", short: nil, value: "PHASE", help: "only runs in this phase (repeatable): success, failure, cancelled, ..."),
            OptionSpec(long: "since", short: nil, value: "WHEN", help: "only runs queued since WHEN: 30m, 2h, 7d, today, 2026-11-01"),
            OptionSpec(long: "until", short: nil, value: "WHEN", help: "only runs queued before WHEN (same forms)"),
            OptionSpec(long: "param", short: "p", value: "NAME=VALUE", help: "only runs with this param value (repeatable)"),
            OptionSpec(long: "limit", short: "n", value: "N", help: "at most N runs (default 20, at most 1000)"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the matches as JSON"),
            OptionSpec(long: "utc", short: nil, value: nil, help: "show times in UTC instead of local time"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard let text = arguments.positionals.first, !text.isEmpty else {
            throw UsageError("baton search: what to look for? baton search TEXT [ACTION]...")
        }
        var filter = try HistoryCommand.filter(arguments, command: "search")
        filter.actions = Array(arguments.positionals.dropFirst())
        if let limit = arguments.value("limit") {
            guard let value = Int(limit), (0...SearchMatch.maxRuns).contains(value) else {
                throw UsageError("baton search: --limit expects a number from 0 to \(SearchMatch.maxRuns), got \(limit)")
            }
            filter.limit = value
        } else {
            filter.limit = 20
        }
        let found = try Query.search(text, filter, context)
        if arguments.flag("json") {
            print(Format.json(found.matches))
            if let cut = found.cut { Stdio.error.write(Data(note(cut).utf8)) }
            return ExitCode.success
        }
        print(render(found.matches, text: text, utc: arguments.flag("utc"), context: context), terminator: "")
        if let cut = found.cut { print(context.paint(note(cut), .dim), terminator: "") }
        return ExitCode.success
    }

    /// Where a search stopped that read its most bytes of output first, and how to go further.
    static func note(_ cut: SearchCut) -> String {
        "search stopped after reading \(Format.bytes(cut.scannedBytes)) of output, at run \(cut.run): the output of older runs "
            + "was not read (name an action, or --since/--until, to search further back)\n"
    }

    /// Each run on a line of its own (id, key, phase, when, how many lines), then its matching
    /// lines, numbered, the text in bold on a terminal.
    static func render(_ matches: [SearchMatch], text: String, utc: Bool, context: Context) -> String {
        if matches.isEmpty { return "no runs match\n" }
        var out = ""
        for match in matches {
            let run = match.run.forTerminal
            var head = "run \(run.id)  \(run.key)  \(context.paint(Format.phaseWord(run), phase: run.phase))  \(Format.time(run.queuedAt, utc: utc))"
            if match.lineCount > 0 { head += "  \(match.lineCount) line\(match.lineCount == 1 ? "" : "s")" }
            if let params = match.params { head += "  in params: " + params.map(Terminal.visible).joined(separator: ", ") }
            out += head + "\n"
            let width = String(match.lines.last?.line ?? 0).count
            var cut = false
            for line in match.lines {
                if line.afterCut == true, !cut {
                    out += "  " + context.paint("… bytes dropped past output.keep …", .dim) + "\n"
                    cut = true
                }
                let number = String(repeating: " ", count: width - String(line.line).count) + String(line.line)
                out += "  " + context.paint(number, .dim) + ": " + highlight(Terminal.visible(line.text), text, context) + "\n"
            }
            if match.lineCount > match.lines.count { out += "  " + context.paint("… \(match.lineCount - match.lines.count) more", .dim) + "\n" }
        }
        return out
    }

    /// The line with each occurrence of `text` (ASCII case ignored) in bold, where colours are on.
    static func highlight(_ line: String, _ text: String, _ context: Context) -> String {
        guard context.useColor, !text.isEmpty else { return line }
        let needle = Array(text.lowercased().utf8), bytes = Array(line.utf8)
        let folded = Array(line.lowercased().utf8)
        guard folded.count == bytes.count else { return line }
        var out: [UInt8] = [], index = 0
        while index < bytes.count {
            if index + needle.count <= bytes.count, folded[index..<index + needle.count].elementsEqual(needle) {
                out += Array(context.paint(String(decoding: bytes[index..<index + needle.count], as: UTF8.self), .bold).utf8)
                index += needle.count
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
