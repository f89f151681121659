import BatonCore

/// How fleet rows become values: the run columns every query selects, and their decoding.
enum FleetRows {
    static let runColumnList = [
        "id", "action", "key", "phase", "policy", "params", "trigger_uid", "trigger_gid", "trigger_pid", "queued_at", "started_at",
        "ended_at", "attempts", "exit_code", "signal", "reason", "error", "host", "cpu_user", "cpu_system", "memory_peak", "via", "slot",
        "hook_run", "hook_action", "hook_event", "debounce_until", "rate_until",
    ]
    static let runColumns = runColumnList.joined(separator: ", ")
    /// How many columns `runColumns` has; a query's own columns follow them (read them by name:
    /// `FleetSelect`).
    static let runColumnCount = runColumnList.count

    static func run(_ row: [String?]) -> RunSnapshot { run(row) { _ in } }

    /// The run of a row, with what `more` sets after its columns (a query's own), in one storage
    /// more than `RunSnapshot.init`'s (`update`).
    static func run(_ row: [String?], _ more: (inout RunSnapshot.Fields) -> Void) -> RunSnapshot {
        let int64 = { (i: Int) in row[i].flatMap { Int64($0) } }
        let peer = int64(6).map { uid in
            Peer(uid: UInt32(truncatingIfNeeded: uid), gid: UInt32(truncatingIfNeeded: int64(7) ?? 0),
                 pid: Int32(truncatingIfNeeded: int64(8) ?? 0))
        }
        var run = RunSnapshot(
            id: int64(0) ?? 0, action: row[1] ?? "", key: row[2] ?? "", phase: Phase(rawValue: row[3] ?? "") ?? .failure,
            policy: Policy(rawValue: row[4] ?? "") ?? .reject, params: JSONText.params(row[5]), trigger: peer,
            queuedAt: Timestamp(rawValue: int64(9) ?? 0), startedAt: int64(10).map(Timestamp.init(rawValue:)),
            endedAt: int64(11).map(Timestamp.init(rawValue:)), attempts: Int(int64(12) ?? 0),
            exitCode: int64(13).map { Int32(truncatingIfNeeded: $0) }, signal: int64(14).map { Int32(truncatingIfNeeded: $0) },
            reason: row[15], error: row[16])
        run.update { run in
            run.host = row[17]
            run.cpuUser = int64(18)
            run.cpuSystem = int64(19)
            run.memoryPeak = int64(20)
            run.via = row[21]
            run.slot = int64(22).map(Timestamp.init(rawValue:))
            if let firing = int64(23), let event = row[25].flatMap(HookEvent.init(rawValue:)) {
                run.hook = HookCause(run: firing, action: row[24] ?? "", event: event)
            }
            // A debounced run waiting for its window ("debouncing, starts in 3.2s"); `loading` clears it.
            if run.phase == .queued { run.debounceUntil = int64(26).map(Timestamp.init(rawValue:)) }
            // A run its rate limit holds back ("rate limited, starts in 12m"), by the database's clock.
            if run.phase == .queued { run.rateUntil = int64(27).map(Timestamp.init(rawValue:)) }
            more(&run)
        }
        return run
    }

    static func transition(runID: Int64, _ row: [String?], from index: Int) -> Transition {
        Transition(runID: runID, seq: Int(row[index] ?? "") ?? 0, from: row[index + 1].flatMap(Phase.init(rawValue:)),
                   to: Phase(rawValue: row[index + 2] ?? "") ?? .failure, at: Timestamp(rawValue: Int64(row[index + 3] ?? "") ?? 0),
                   detail: JSONText.detail(row[index + 4]))
    }

    static func text(_ value: Int64?) -> String? { value.map(String.init) }
    static func text(_ value: Int32?) -> String? { value.map(String.init) }
    static func text(_ value: UInt32?) -> String? { value.map(String.init) }
}

/// The key slot as its row stores it: `holder, follow_up, draining`, then `line` where the
/// statement reads it (schema version 16; `follow_up` is the line's first entry).
extension KeySlot {
    init(row: [String?]) {
        let first = row[1].flatMap { Int64($0) }
        let line = row.count > 3 ? Self.parseArray(row[3]) : []
        self.init(holder: row[0].flatMap { Int64($0) }, line: line.isEmpty ? (first.map { [$0] } ?? []) : line,
                  draining: Set(Self.parseArray(row[2])))
    }

    /// The slot's columns as `UPDATE keys` writes them after the key: holder, follow_up, draining, line.
    var rowTexts: [String?] { [FleetRows.text(holder), FleetRows.text(followUp), drainingText, lineText] }

    /// `{1,2}` → [1, 2].
    static func parseArray(_ text: String?) -> [Int64] {
        guard let text else { return [] }
        return text.split(whereSeparator: { $0 == "{" || $0 == "}" || $0 == "," }).compactMap { Int64($0) }
    }

    var drainingText: String { "{" + draining.sorted().map(String.init).joined(separator: ",") + "}" }
    /// The line in its order: `{4,2,9}`.
    var lineText: String { "{" + line.map(String.init).joined(separator: ",") + "}" }
}
