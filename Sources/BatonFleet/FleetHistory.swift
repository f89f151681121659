import BatonCore
import FoundationEssentials

/// The fleet's history as the service queries it: every host's runs. Each query runs on one of
/// the pool's connections (its own thread), never on Swift's cooperative threads, and the
/// asking task waits without a thread; a read that meets a connection broken since (a server
/// restart) runs once more on a new one; errors come as `historyUnreadable`, naming PostgreSQL,
/// never as SQL.
struct FleetHistory: HistoryReader {
    let pool: PGPool

    func read<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws(BatonError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw .historyUnreadable("PostgreSQL: \(error)")
        }
    }

    func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] {
        try await read { db in try FleetFilterSQL(filter).runs(limit: filter.limit, on: db) }
    }

    /// The run, its transitions, triggers and output as of one snapshot (the run's row then
    /// agrees with its transitions even while its host writes).
    func run(_ id: Int64) async throws(BatonError) -> RunDetail? {
        try await read { db in
            try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            do {
                let detail = try Self.detail(id, on: db)
                try db.execute("COMMIT")
                return detail
            } catch {
                if db.isOK { try? db.execute("ROLLBACK") }
                throw error
            }
        }
    }

    static func detail(_ id: Int64, on db: PGConnection) throws -> RunDetail? {
        guard let row = try db.query("SELECT \(FleetRows.runColumns) FROM runs WHERE id = $1", [String(id)]).first else { return nil }
        let transitions = try db.query("SELECT seq, from_phase, to_phase, at, detail FROM transitions WHERE run_id = $1 ORDER BY seq",
                                       [String(id)]).rows.map { FleetRows.transition(runID: id, $0, from: 0) }
        let triggers = try db.query("""
            SELECT run_id, action, key, decision, policy, uid, gid, pid, at, params, via FROM triggers WHERE run_id = $1 ORDER BY id
            """, [String(id)]).rows.map(trigger)
        let output = try db.query("SELECT encode(tail, 'hex'), truncated FROM outputs WHERE run_id = $1", [String(id)]).first
        var run = FleetRows.run(row)
        // Its wait for approval, or how it was decided (`approval: approved by bob at ...`).
        run.approval = try FleetApprovals.of(id, on: db)
        var detail = RunDetail(run: run, transitions: transitions, triggers: triggers,
                               output: output.map { Data(unhex($0[0] ?? "")) }, outputTruncated: output?[1] == "t")
        // The runs its hooks made, whichever host made them (the other way is the run's `hook`).
        detail.hookRuns = try db.query("SELECT \(FleetRows.runColumns) FROM runs WHERE hook_run = $1 ORDER BY id", [String(id)]).rows
            .map(FleetRows.run)
        // The runs it needs and the runs that need it, whichever host runs them (`FleetNeeds`).
        let needs = try FleetNeeds.both(id, on: db)
        detail.run.needs = needs.needs.isEmpty ? nil : needs.needs
        detail.run.neededBy = needs.neededBy.isEmpty ? nil : needs.neededBy
        if let totals = try db.query("SELECT total, dropped FROM output_totals WHERE run_id = $1", [String(id)]).first,
           let written = totals[0].flatMap({ Int64($0) }), let dropped = totals[1].flatMap({ Int64($0) }) {
            detail.outputTotals = OutputTotals(written: written, dropped: dropped)
        }
        return detail
    }

    static func trigger(_ row: [String?]) -> TriggerRecord {
        let int = { (i: Int) in row[i].flatMap { Int64($0) } }
        let peer = int(5).map { Peer(uid: UInt32(truncatingIfNeeded: $0), gid: UInt32(truncatingIfNeeded: int(6) ?? 0), pid: Int32(truncatingIfNeeded: int(7) ?? 0)) }
        return TriggerRecord(runID: int(0), action: row[1] ?? "", key: row[2] ?? "", decision: TriggerRecord.Decision(row[3] ?? "") ?? .rejected,
                             policy: Policy(rawValue: row[4] ?? "") ?? .reject, peer: peer, at: Timestamp(rawValue: int(8) ?? 0),
                             params: JSONText.params(row[9]), via: row.count > 10 ? row[10] : nil)
    }

    static func unhex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        func value(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
        return stride(from: 0, to: digits.count - 1, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
    }

    func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] {
        try await read { db in
            let names = actions.isEmpty ? try db.query("SELECT DISTINCT action FROM runs ORDER BY action").rows.compactMap { $0[0] } : actions
            return try names.map { try FleetStats.stats(of: $0, since: since, on: db) }
        }
    }

    func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] {
        try await read { db in
            // As one machine's `history --denied`: the denials, and the triggers a rate limit refused.
            let denials = TriggerRecord.Decision.refusals.map(\.description)
            let marks = denials.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            return try db.query("""
                SELECT run_id, action, key, decision, policy, uid, gid, pid, at, params, via FROM triggers
                WHERE decision IN (\(marks)) ORDER BY id DESC LIMIT $\(denials.count + 1)::bigint
                """, denials + [String(max(limit, 0))]).rows.map(Self.trigger)
        }
    }

    func lastEnded() async throws(BatonError) -> [RunSnapshot] {
        try await read { db in
            try db.query("""
                SELECT DISTINCT ON (action) \(FleetRows.runColumns) FROM runs
                WHERE phase IN ('success', 'failure', 'cancelled') ORDER BY action, id DESC
                """).rows.map(FleetRows.run)
        }
    }

    func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] {
        try await read { db in
            var result: [String: [Int64]] = [:]
            for action in actions {
                let list = try db.query("""
                    SELECT ended_at - started_at FROM runs WHERE action = $1 AND phase = 'success' AND started_at IS NOT NULL
                    ORDER BY ended_at DESC LIMIT $2::bigint
                    """, [action, String(DurationEstimates.window)]).rows.compactMap { $0[0].flatMap { Int64($0) } }
                if !list.isEmpty { result[action] = list.reversed() }
            }
            return result
        }
    }
}

/// `baton stats` over the fleet's runs.
enum FleetStats {
    static func stats(of action: String, since: Timestamp?, on db: PGConnection) throws -> ActionStats {
        let from = String(since?.rawValue ?? Int64.min)
        var counts: [Phase: Int] = [:]
        for row in try db.query("""
            SELECT phase, count(*) FROM runs WHERE action = $1 AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= $2::bigint
            GROUP BY phase
            """, [action, from]).rows {
            if let phase = row[0].flatMap(Phase.init(rawValue:)) { counts[phase] = Int(row[1] ?? "") ?? 0 }
        }
        let durations = try db.query("""
            SELECT ended_at - started_at AS d FROM runs
            WHERE action = $1 AND phase = 'success' AND ended_at >= $2::bigint AND started_at IS NOT NULL ORDER BY d
            """, [action, from]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        func latest(_ phase: String) throws -> Timestamp? {
            try db.query("SELECT max(ended_at) FROM runs WHERE action = $1 AND phase = $2 AND ended_at >= $3::bigint",
                         [action, phase, from]).first?[0].flatMap { Int64($0) }.map(Timestamp.init(rawValue:))
        }
        let streak = Int(try db.query("""
            SELECT count(*) FROM runs WHERE action = $1 AND phase = 'failure' AND ended_at >= $2::bigint
              AND ended_at > coalesce((SELECT max(ended_at) FROM runs WHERE action = $1 AND phase = 'success'), -1)
            """, [action, from]).first?[0] ?? "") ?? 0
        let recent = try db.query("""
            SELECT id, phase, ended_at - started_at FROM runs
            WHERE action = $1 AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= $2::bigint ORDER BY id DESC LIMIT 20
            """, [action, from]).rows.map {
            ActionStats.Recent(id: Int64($0[0] ?? "") ?? 0, phase: Phase(rawValue: $0[1] ?? "") ?? .failure, duration: $0[2].flatMap { Int64($0) })
        }
        let usage = try db.query("""
            SELECT cpu_user + cpu_system, memory_peak FROM runs
            WHERE action = $1 AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= $2::bigint
              AND (cpu_user IS NOT NULL OR memory_peak IS NOT NULL)
            """, [action, from]).rows
        let success = counts[.success] ?? 0, failure = counts[.failure] ?? 0
        var stats = ActionStats(
            action: action, success: success, failure: failure, cancelled: counts[.cancelled] ?? 0,
            successRate: success + failure > 0 ? Double(success) / Double(success + failure) : nil,
            p50: ActionStats.nearestRank(durations, 50), p95: ActionStats.nearestRank(durations, 95), max: durations.last,
            lastSuccess: try latest("success"), lastFailure: try latest("failure"), failureStreak: streak, recent: recent.reversed())
        stats.setUsage(cpu: usage.compactMap { $0[0].flatMap { Int64($0) } }, memory: usage.compactMap { $0[1].flatMap { Int64($0) } })
        return stats
    }
}

extension FleetHistory {
    /// The runs whose kept output or params hold the text (`FleetSearch`), on `searcher`: a
    /// connection of its own, one search at a time, so that a long search never holds a
    /// connection of the pool that starts, cancels and approves runs. Once `stop` says the asker
    /// went away, the search answers what it found so far.
    static func search(_ text: String, _ filter: HistoryFilter, on searcher: PGWorker,
                       stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult {
        do {
            return try await searcher.run({ db in try FleetSearch.search(text, filter, stop: stop, on: db) }, retryingBroken: true)
        } catch let error as PGError where error.message == PGWorker.full && error.sqlState == "08006" {
            // As one host answers a search past its queue's bound (`Store.read(searching:)`).
            throw .storeUnavailable("\(searcher.capacity) searches already wait on this host")
        } catch {
            throw .historyUnreadable("PostgreSQL: \(error)")
        }
    }
}
