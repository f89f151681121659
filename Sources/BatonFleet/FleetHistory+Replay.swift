import BatonCore

extension FleetHistory {
    /// The fleet's transitions (every host's) committed after `cursor`, as SQLite's history answers
    /// (`History.transitions(after:action:limit:)`), in one snapshot: at most `limit`, the newest,
    /// oldest first, and how many older ones were left out. Ordered by `at`, each host's clock:
    /// a host whose clock is behind another's by more than the time between a watch's two
    /// connections may have a transition left out (docs/protocol.md says so).
    func transitions(after cursor: WatchCursor, action: String?, limit: Int) async throws(BatonError) -> Replay {
        try await read { db in
            try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do {
                let replay = try Self.replay(after: cursor, action: action, limit: max(limit, 0), on: db)
                try db.execute("COMMIT")
                return replay
            } catch {
                if db.isOK { try? db.execute("ROLLBACK") }
                throw error
            }
        }
    }

    enum UpdatePart: Hashable, Sendable { case transition }
    /// A run with one of its transitions (`FleetRows.transition`'s columns).
    static let updateColumns = FleetSelect<UpdatePart>(run: "r", [(.transition, ["t.seq", "t.from_phase", "t.to_phase", "t.at", "t.detail"])])

    static func replay(after cursor: WatchCursor, action: String?, limit: Int, on db: PGConnection) throws -> Replay {
        var arguments: [String?] = [String(cursor.at.rawValue), String(cursor.run), String(cursor.seq)]
        let only = action.map { arguments.append($0); return " AND r.action = $4" } ?? ""
        let after = "(t.at, t.run_id, t.seq) > ($1::bigint, $2::bigint, $3::int)" + only
        let rows = try db.query("""
            SELECT \(updateColumns.sql) FROM transitions t JOIN runs r ON r.id = t.run_id
            WHERE \(after) ORDER BY t.at DESC, t.run_id DESC, t.seq DESC LIMIT \(limit)
            """, arguments).rows
        var replay = Replay(updates: rows.reversed().map { row in
            let run = FleetRows.run(row)
            return RunUpdate(run: run, transition: FleetRows.transition(runID: run.id, row, from: updateColumns.range(.transition).lowerBound))
        })
        guard rows.count == limit, let oldest = replay.updates.first?.transition else { return replay }
        arguments += [String(oldest.at.rawValue), String(oldest.runID), String(oldest.seq)]
        let n = arguments.count
        let counted = try db.query("""
            SELECT count(*) FROM transitions t JOIN runs r ON r.id = t.run_id
            WHERE \(after) AND (t.at, t.run_id, t.seq) < ($\(n - 2)::bigint, $\(n - 1)::bigint, $\(n)::int)
            """, arguments).rows
        replay.skipped = Int(counted.first?[0] ?? "") ?? 0
        return replay
    }
}
