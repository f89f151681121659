import BatonCore

extension History {
    /// The transitions committed after `cursor` (of `action`, or all), oldest first, each with its
    /// run as the history has it now: at most `limit`, the newest, and how many older ones were
    /// left out. Read newest first through `transitions_by_time` (whose rows carry the key, run and
    /// sequence, so the order is the index's); the count of those left out runs only when some were.
    public func transitions(after cursor: WatchCursor, action: String?, limit: Int) throws -> Replay {
        let limit = max(limit, 0)
        var arguments: [DatabaseValue] = [.integer(cursor.at.rawValue), .integer(cursor.run), .integer(Int64(cursor.seq))]
        let only = action.map { arguments.append(.text($0)); return " AND r.action = ?4" } ?? ""
        let after = Self.replayAfter + only
        let newestFirst = try connection.withStatement(Self.replaySQL(after, limit: limit)) { s -> [RunUpdate] in
            try s.bind(arguments)
            var list: [RunUpdate] = []
            let c = Self.runColumnCount
            while try s.step() {
                let run = Self.decodeRun(s)
                let transition = Transition(
                    runID: run.id, seq: Int(s.int64(c) ?? 0), from: s.string(c + 1).flatMap(Phase.init(rawValue:)),
                    to: Phase(rawValue: s.string(c + 2) ?? "") ?? .failure, at: Timestamp(rawValue: s.int64(c + 3) ?? 0),
                    detail: JSONText.detail(s.string(c + 4)))
                list.append(RunUpdate(run: run, transition: transition))
            }
            return list
        }
        var replay = Replay(updates: newestFirst.reversed())
        guard newestFirst.count == limit, let oldest = replay.updates.first?.transition else { return replay }
        // Left out: after the cursor and before the oldest sent.
        arguments += [.integer(oldest.at.rawValue), .integer(oldest.runID), .integer(Int64(oldest.seq))]
        let n = arguments.count
        let before = " AND (t.at, t.run_id, t.seq) < (?\(n - 2), ?\(n - 1), ?\(n))"
        replay.skipped = try connection.withStatement("""
            SELECT count(*) FROM transitions t JOIN runs r ON r.id = t.run_id WHERE \(after)\(before)
            """) { s -> Int in
            try s.bind(arguments)
            return try s.step() ? Int(s.int64(0) ?? 0) : 0
        }
        return replay
    }

    /// Transitions after the cursor (?1 its time, ?2 its run, ?3 its sequence).
    static let replayAfter = "t.at >= ?1 AND (t.at, t.run_id, t.seq) > (?1, ?2, ?3)"

    /// The newest `limit` transitions `after` selects, each with its run's columns first.
    static func replaySQL(_ after: String, limit: Int) -> String {
        let columns = runColumns.split(separator: ",").map { "r." + String($0.trimmingPrefix(while: \.isWhitespace)) }.joined(separator: ", ")
        return """
            SELECT \(columns), t.seq, t.from_phase, t.to_phase, t.at, t.detail FROM transitions t JOIN runs r ON r.id = t.run_id
            WHERE \(after) ORDER BY t.at DESC, t.run_id DESC, t.seq DESC LIMIT \(limit)
            """
    }
}
