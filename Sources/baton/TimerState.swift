import BatonCore

/// A schedule's timer as systemd reports it (`systemctl show -p Id,LoadState,…`, run with TZ=UTC
/// and LC_ALL=C): whether it is loaded and armed, when it elapses next and when it last did.
struct TimerState: Encodable, Equatable {
    /// The unit, `baton-schedule-ACTION.timer`.
    var unit: String
    /// `loaded`, or `not-found` where no generator wrote it.
    var load: String
    /// `active`, `inactive` or `failed`.
    var active: String
    /// `waiting`, `running`, `elapsed`, `dead` or `failed`.
    var sub: String
    /// Why it last failed (`success` when it did not).
    var result: String
    /// When it elapses next; nil when it is not armed.
    var next: Timestamp?
    /// When it last elapsed; nil when it never did (since its state was last reset).
    var lastTrigger: Timestamp?

    /// The properties `parse` reads, for `systemctl show -p`.
    static let properties = "Id,LoadState,ActiveState,SubState,Result,NextElapseUSecRealtime,LastTriggerUSec"

    /// The timers in `systemctl show` output: a block of `Key=Value` lines per unit, blocks apart
    /// by an empty line. A block without `Id` is left out.
    static func parse(_ output: String) -> [TimerState] {
        output.split(separator: "\n\n").compactMap { block in
            var fields: [Substring: Substring] = [:]
            for line in block.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[line[..<equals]] = line[line.index(after: equals)...]
            }
            guard let unit = fields["Id"], !unit.isEmpty else { return nil }
            return TimerState(unit: String(unit), load: String(fields["LoadState"] ?? ""), active: String(fields["ActiveState"] ?? ""),
                              sub: String(fields["SubState"] ?? ""), result: String(fields["Result"] ?? ""),
                              next: time(fields["NextElapseUSecRealtime"]), lastTrigger: time(fields["LastTriggerUSec"]))
        }
    }

    /// A time as `systemctl show` prints it under TZ=UTC and LC_ALL=C, `Fri 2026-12-04 20:45:00 UTC`
    /// (systemd 252 prints these properties so whatever `--timestamp` says), or `@SECONDS`, as
    /// `--timestamp=unix` would; nil for an empty value, `n/a`, or a time in another zone.
    static func time(_ value: Substring?) -> Timestamp? {
        guard let value else { return nil }
        if value.hasPrefix("@") {
            guard let seconds = Int64(value.dropFirst()), seconds > 0 else { return nil }
            return Timestamp(rawValue: seconds * 1_000_000)
        }
        let words = value.split(separator: " ")
        guard words.count == 4, words[3] == "UTC", words[1].count == 10, words[2].count == 8 else { return nil }
        return ScheduledTime.parse("\(words[1])T\(words[2])Z")
    }

    /// What `baton schedules` shows: `active (waiting)`, `failed (resources)`, `not loaded`.
    var summary: String {
        if load != "loaded" { return "not loaded" }
        if active == "failed" { return "failed (\(result))" }
        return sub.isEmpty ? active : "\(active) (\(sub))"
    }
}
