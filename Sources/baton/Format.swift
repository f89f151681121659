import BatonCore
import FoundationEssentials
import Glibc

/// How values look in tables and stories.
enum Format {
    /// A local (or UTC) time: `2026-11-29 14:03:07`.
    static func time(_ timestamp: Timestamp, utc: Bool = false) -> String {
        var seconds = time_t(timestamp.rawValue / 1_000_000)
        var parts = tm()
        if utc { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        return printf("%04d-%02d-%02d %02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// An ISO 8601 time with its offset: `2026-11-29T14:03:07+01:00`, or `…Z` in UTC.
    static func isoTime(_ timestamp: Timestamp, utc: Bool = false) -> String {
        var seconds = time_t(timestamp.rawValue / 1_000_000)
        var parts = tm()
        if utc { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        let base = printf("%04d-%02d-%02dT%02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                          parts.tm_hour, parts.tm_min, parts.tm_sec)
        if utc { return base + "Z" }
        let offset = parts.tm_gmtoff
        let sign = offset < 0 ? "-" : "+"
        return base + sign + printf("%02ld:%02ld", abs(offset) / 3600, abs(offset) % 3600 / 60)
    }

    /// `text` cut or filled with spaces to `width` characters (as NSString's `padding` did).
    static func padded(_ text: String, _ width: Int) -> String {
        String(text.prefix(width)) + String(repeating: " ", count: max(0, width - text.count))
    }

    /// Numbers as printf writes them (`%02d`, `%.3f`), through vsnprintf: what String(format:)
    /// wrote, without Foundation.
    static func printf(_ format: String, _ arguments: CVarArg...) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let needed = Int(withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) })
        if needed >= buffer.count {
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        return String(cString: buffer)
    }

    /// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingEvery("\"", with: "\"\"") + "\""
    }

    /// What a transition's detail says, in words: `cancelled`, `attempt 2`, `exit 3`, `by alice`, the error.
    static func notes(_ detail: TransitionDetail) -> [String] {
        var notes: [String] = []
        if let reason = detail.reason { notes.append(reason) }
        if let via = detail.via { notes.append(via) }
        if let attempt = detail.attempt { notes.append("attempt \(attempt)") }
        if let locks = detail.locks { notes.append("took lock\(locks.count == 1 ? "" : "s") " + locks.joined(separator: ", ")) }
        if let code = detail.exitCode { notes.append("exit \(code)") }
        if let signal = detail.signal { notes.append("signal \(signal)") }
        // A group principal's cancel names the person in `via` (above): its uid is no one's.
        if let by = detail.by, by != Peer.groupPrincipalUID || detail.via == nil { notes.append("by \(userName(by))") }
        if let debounce = detail.debounce { notes.append("debounce until \(time(Timestamp(rawValue: debounce)))") }
        if let backoff = detail.backoff { notes.append("retry in \(DurationText.format(.microseconds(backoff)))") }
        if let leftovers = detail.leftovers { notes.append("\(leftovers) leftover process\(leftovers == 1 ? "" : "es")") }
        if let user = detail.cpuUser, let system = detail.cpuSystem {
            notes.append("cpu \(DurationText.format(.microseconds(user))) user, \(DurationText.format(.microseconds(system))) system")
        }
        if let peak = detail.memoryPeak { notes.append("peak memory \(bytes(peak))") }
        if let error = detail.error { notes.append(error) }
        return notes
    }

    /// What a run's processes used, in words: `cpu 310ms (300ms user, 10ms system), peak memory 101 MiB`; nil where unmeasured.
    static func usage(_ run: RunSnapshot) -> String? {
        var parts: [String] = []
        if let user = run.cpuUser, let system = run.cpuSystem {
            parts.append("cpu \(DurationText.format(.microseconds(user + system))) (\(DurationText.format(.microseconds(user))) user, "
                + "\(DurationText.format(.microseconds(system))) system)")
        }
        if let peak = run.memoryPeak { parts.append("peak memory \(bytes(peak))") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// A size in bytes as people read it: `812 B`, `4.2 KiB`, `201 MiB`, `1.5 GiB`.
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count), unit = 0
        while value >= 1_024 && unit < units.count - 1 { value /= 1_024; unit += 1 }
        if unit == 0 { return "\(count) B" }
        return value < 10 ? "\((value * 10).rounded() / 10) \(units[unit])" : "\(Int(value.rounded())) \(units[unit])"
    }

    /// The user name of a uid (as a terminal shows it), or `uid N` when it has none.
    /// Who sent a request: `alice (uid 1000, pid 4242)`.
    static func caller(_ peer: Peer) -> String {
        "\(userName(peer.uid)) (uid \(peer.uid), pid \(peer.pid))"
    }

    static func userName(_ uid: UInt32) -> String {
        UserDatabase.userName(uid).map(Terminal.visible) ?? "uid \(uid)"
    }

    /// A group principal of the team's dashboard (`carol@example.org via group:ops`, from `via`), or nil:
    /// its uid names no one.
    static func principal(_ peer: Peer?, via: String?) -> String? {
        peer?.uid == Peer.groupPrincipalUID ? via.map(Terminal.visible) : nil
    }

    /// How long ago: `42s ago`, `3m04s ago`.
    static func age(_ timestamp: Timestamp, now: Timestamp = .now) -> String {
        DurationText.format(now - timestamp) + " ago"
    }

    /// A pending debounced run, in words: `debouncing, starts in 3.2s` (tenths under a minute), or
    /// a run its rate limit holds back: `rate limited, starts in 12m`; nil for any other run.
    static func debouncing(_ run: RunSnapshot, now: Timestamp = .now) -> String? {
        guard run.phase == .queued, let until = run.debounceUntil ?? run.rateUntil else { return nil }
        let left = max(until.rawValue - now.rawValue, 0)
        let text = left < 60_000_000 ? "\(left / 1_000_000).\(left / 100_000 % 10)s" : DurationText.format(.microseconds(left))
        return (run.debounceUntil == nil ? "rate limited, starts in " : "debouncing, starts in ") + text
    }

    /// A queued run waiting for the runs it needs: `waiting for build-a run 41, build-b run 42`
    /// (those not yet succeeded); nil for any other run.
    static func needing(_ run: RunSnapshot) -> String? {
        guard run.phase == .queued, let needs = run.needs?.filter({ $0.phase != .success }), !needs.isEmpty else { return nil }
        return "waiting for " + needs.map(\.text).joined(separator: ", ")
    }

    /// A queued run waiting for its approval: `waiting for approval by group:ops (until 14:05)`;
    /// nil for any other run.
    static func approving(_ run: RunSnapshot) -> String? {
        guard run.phase == .queued, let approval = run.approval, approval.isWaiting else { return nil }
        let until = approval.until.map { " (until \(String(time($0).dropFirst(11).prefix(5))))" } ?? ""
        return "waiting for approval by " + approval.by.joined(separator: ", ") + until
    }

    /// How a run's approval was decided: `approved by bob 2026-12-05 14:03:07`, `denied by alice …: why`.
    static func approvalDecision(_ approval: ApprovalState) -> String? {
        guard let text = approval.decisionText else { return nil }
        guard let at = approval.decidedAt else { return text }
        guard let reason = approval.reason, approval.verdict == .denied else { return "\(text) at \(time(at))" }
        return "denied by \(approval.decidedBy ?? "?") at \(time(at)): \(reason)"
    }

    /// Runs a run needs or is needed by, each with its phase: `build-a run 41 (success), build-b run 42 (loading)`.
    static func needList(_ list: [NeededRun]) -> String {
        list.map { "\($0.text) (\($0.phase.rawValue)\($0.failure != nil && $0.reason != nil ? ", " + $0.reason! : ""))" }.joined(separator: ", ")
    }

    /// How long a run took (or has taken so far), from its first loading.
    static func duration(_ run: RunSnapshot, now: Timestamp = .now) -> String {
        guard let started = run.startedAt else { return "-" }
        return DurationText.format((run.endedAt ?? now) - started)
    }

    /// The columns text takes on a terminal: colour escapes take none.
    static func visibleCount(_ text: String) -> Int {
        guard text.utf8.contains(0x1B) else { return text.count }
        var count = 0
        var inEscape = false
        for character in text {
            if character == "\u{1B}" { inEscape = true }
            else if inEscape { if character == "m" { inEscape = false } }
            else { count += 1 }
        }
        return count
    }

    /// Pads or cuts text to `width` columns, cutting with `…`.
    static func fit(_ text: String, _ width: Int) -> String {
        let visible = visibleCount(text)
        if visible <= width { return text + String(repeating: " ", count: width - visible) }
        guard width > 1 else { return String(text.prefix(width)) }
        return String(text.prefix(width - 1)) + "…"
    }

    /// The columns stdout's lines may take: the terminal's width; else `$COLUMNS` where set (an
    /// explicit wish: `COLUMNS=80 baton history | less`); else nil: stdout is a pipe or a file,
    /// whose reader (`cut`, `grep`, a script) must get every cell whole.
    static var columns: Int? { columns(of: 1) }

    /// `columns` for callers that want a number: `Int.max` (nothing cut) where there is no width.
    static var terminalWidth: Int { columns ?? .max }

    /// The width of the terminal `fd` is, else `$COLUMNS`, else nil.
    static func columns(of fd: Int32) -> Int? {
        var size = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return Environment.value("COLUMNS").flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
    }

    /// The width of the terminal `fd` is, else `$COLUMNS`, else 100 (the spinner's line, drawn on a terminal only).
    static func width(of fd: Int32) -> Int { columns(of: fd) ?? 100 }

    /// A table: a header row and rows, columns as wide as their content; with a `width`, the last
    /// column takes what is left of it (8 at least) and is cut with `…`; without one nothing is cut.
    static func table(_ header: [String], _ rows: [[String]], width: Int? = columns) -> String {
        guard !header.isEmpty else { return "" }
        let all = [header] + rows
        var widths = header.indices.map { column in all.map { visibleCount($0[column]) }.max() ?? 0 }
        let fixed = widths.dropLast().reduce(0, +) + 2 * (widths.count - 1)
        if let width { widths[widths.count - 1] = max(min(widths.last!, width - fixed), 8) }
        // Written as bytes: a line's trailing spaces are bytes 0x20 (no other character holds one),
        // which spares the grapheme walk that `String.last` makes per character.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(all.count * (widths.reduce(0, +) + 2 * widths.count + 1))
        for row in all {
            for (column, cell) in row.enumerated() {
                if column > 0 { bytes.append(0x20); bytes.append(0x20) }
                let visible = visibleCount(cell)
                if visible <= widths[column] {
                    bytes.append(contentsOf: cell.utf8)
                    bytes.append(contentsOf: repeatElement(0x20, count: widths[column] - visible))
                } else {
                    bytes.append(contentsOf: fit(cell, widths[column]).utf8)
                }
            }
            while bytes.last == 0x20 { bytes.removeLast() }
            bytes.append(0x0A)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func phaseWord(_ run: RunSnapshot) -> String {
        if run.phase == .failure, run.reason == "timeout" { return "failure (timeout)" }
        return run.phase.rawValue
    }

    /// Encodes a value as JSON for `--json`.
    static func json<T: Encodable>(_ value: T, pretty: Bool = true) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        guard let text = (try? encoder.encode(value)).map({ String(decoding: $0, as: UTF8.self) }) else { return "null" }
        // JSONEncoder prints an empty object or array over three lines; `{}` and `[]` read better.
        return pretty ? text.replacing(/\{\n\s*\n\s*\}/, with: "{}").replacing(/\[\n\s*\n\s*\]/, with: "[]") : text
    }
}

extension String {
    /// Without its trailing spaces, counted as bytes: U+0020 is one byte that no other character holds.
    func trimmingTrailingSpaces() -> String {
        let spaces = utf8.reversed().prefix { $0 == 0x20 }.count
        return spaces == 0 ? self : String(decoding: utf8.dropLast(spaces), as: UTF8.self)
    }
}
