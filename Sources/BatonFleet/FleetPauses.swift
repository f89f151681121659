import BatonCore
import FoundationEssentials

/// Paused actions across a fleet (schema 17, `pauses` and `pause_events`): a pause made on any
/// host is a row every host's trigger batch reads in its transaction (`KeyDecision` refuses the
/// trigger with it) and every start reads with its run (`KeyDecision.mayStart`), so no host
/// runs a paused action once the pause is committed; each host's conductor learns the rows from
/// its feed (`pausesSeen`, for `status`, metrics and the dashboard). `pauseAfterFailures` is
/// counted over every host's runs, in the transaction that writes a failure
/// (`JournalEntry.countFailures`): by the engine's `ConductorState.failureStreak` on the rows.
///
/// Lock order: a transaction that touches an action's pause row (a pause, a resume, a count of
/// its failures: the writer's) takes a transaction-scoped advisory lock of each such action, in
/// name order, before anything else (`locks(for:)`, in its opening, before its key rows); no
/// transaction takes one after another lock, so none waits for it while holding what its holder
/// waits for. Readers (trigger batches, starts, the feed) take none.
enum FleetPauses {
    typealias Statement = FleetJournal.Statement

    /// A pause row's columns, as `pause(_:)` reads them.
    static let columns = "action, paused_by, reason, at, until"

    static func pause(_ row: [String?], from index: Int = 0) -> ActionPause? {
        guard row.count >= index + 5, let action = row[index], let by = row[index + 1],
              let at = row[index + 3].flatMap({ Int64($0) }) else { return nil }
        return ActionPause(action: action, by: by, reason: row[index + 2] ?? "", at: Timestamp(rawValue: at),
                           until: row[index + 4].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)))
    }

    /// A pause's columns joined as `p` to a run's row (NULLs where its action is not paused).
    static let joined = "p.action, p.paused_by, p.reason, p.at, p.until"

    /// Whether run `r`'s action has a pause that holds now by the database's clock: a look's
    /// filter only (the start decides with `KeyDecision.mayStart` on the row it reads).
    static let holds = "EXISTS (SELECT 1 FROM pauses p WHERE p.action = r.action AND (p.until IS NULL OR p.until > \(FleetCooldown.databaseNow)))"

    /// Every pause the fleet holds now (those whose time ran out included: `holds(at:)` says).
    static let all: Statement = ("SELECT \(columns) FROM pauses ORDER BY action", [])

    /// The pauses of `actions`.
    static func of(_ actions: [String]) -> Statement {
        ("SELECT \(columns) FROM pauses WHERE action = ANY ($1::text[])", [FleetJournal.textArray(actions)])
    }

    static func read(on db: PGConnection) throws -> [ActionPause] {
        try db.query(all).rows.compactMap { pause($0) }
    }

    /// The advisory lock of one action's pause, held to the transaction's end.
    static func lock(_ action: String) -> Statement {
        ("SELECT pg_advisory_xact_lock(hashtext('baton pause'), hashtext($1))", [action])
    }

    /// The pause locks an item's entries need, in name order: the first statements of its transaction.
    static func locks(for entries: [JournalEntry]) -> [Statement] {
        var actions = Set<String>()
        for entry in entries {
            switch entry {
            case let .pause(pause): actions.insert(pause.action)
            case let .resume(action, _, _): actions.insert(action)
            case let .countFailures(_, action, _): actions.insert(action)
            default: break
            }
        }
        return actions.sorted().map(lock)
    }

    /// A pause made (or its end or reason moved), and its event.
    static func write(_ pause: ActionPause, host: String) -> [Statement] {
        let until = pause.until.map { String($0.rawValue) }
        return [("""
                 INSERT INTO pauses (action, paused_by, reason, at, until) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (action) DO UPDATE SET paused_by = excluded.paused_by, reason = excluded.reason, at = excluded.at, until = excluded.until
                 """, [pause.action, pause.by, pause.reason, String(pause.at.rawValue), until]),
                ("INSERT INTO pause_events (action, event, by_whom, reason, at, until, host) VALUES ($1, 'paused', $2, $3, $4, $5, $6)",
                 [pause.action, pause.by, pause.reason, String(pause.at.rawValue), until, host])]
    }

    /// A pause ended by `by`, and its event.
    static func resume(_ action: String, by: String, at: Timestamp, host: String) -> [Statement] {
        [("DELETE FROM pauses WHERE action = $1", [action]),
         ("INSERT INTO pause_events (action, event, by_whom, at, host) VALUES ($1, 'resumed', $2, $3, $4)",
          [action, by, String(at.rawValue), host])]
    }

    /// In the transaction that wrote run `run`'s failure, holding the action's pause lock
    /// (`locks(for:)`): counts its action's failures in a row
    /// over every host's runs since its last pause or resume, and pauses it when they reach
    /// `most` (unless a pause holds already). Returns whether it paused it.
    static func countFailures(run: Int64, action: String, most: Int, on db: PGConnection, host: String) throws -> Bool {
        let read = try db.pipeline([
            ("SELECT \(columns), \(FleetCooldown.databaseNow) FROM pauses WHERE action = $1", [action]),
            ("SELECT max(at) FROM pause_events WHERE action = $1", [action]),
            ("""
             SELECT \(FleetRows.runColumns) FROM runs WHERE action = $1 AND phase IN ('success', 'failure')
             ORDER BY ended_at DESC, id DESC LIMIT $2::bigint
             """, [action, String(most)]),
        ])
        if let row = read[0].first, let pause = pause(row), let now = row[5].flatMap({ Int64($0) }),
           pause.holds(at: Timestamp(rawValue: now)) { return false }
        let since = read[1].first?[0].flatMap { Int64($0) }.map(Timestamp.init(rawValue:))
        let runs = read[2].rows.map { FleetRows.run($0) }
        let streak = ConductorState.failureStreak(runs, since: since)
        guard streak >= most, let last = runs.first(where: { $0.id == run }) ?? runs.first else { return false }
        _ = try db.pipeline(write(ActionPause.afterFailures(streak, last: last, at: .now), host: host))
        return true
    }
}

extension FleetHistory {
    /// The pauses and resumes of the actions `filter` names (all without), inside its window,
    /// newest first (oldest first with `reverse`), at most its limit: every host's.
    func events(_ filter: HistoryFilter) async throws(BatonError) -> [ActionEvent] {
        try await read { db in
            var clauses: [String] = [], arguments: [String?] = []
            func add(_ value: String) -> String { arguments.append(value); return "$\(arguments.count)" }
            if !filter.actions.isEmpty { clauses.append("action IN (\(filter.actions.map(add).joined(separator: ", ")))") }
            if let since = filter.since { clauses.append("at >= \(add(String(since.rawValue)))::bigint") }
            if let until = filter.until { clauses.append("at < \(add(String(until.rawValue)))::bigint") }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            let order = filter.reverse ? "ASC" : "DESC"
            let limit = add(String(max(filter.limit, 0)))
            return try db.query("""
                SELECT action, event, by_whom, reason, at, until FROM pause_events \(whereClause)
                ORDER BY at \(order), id \(order) LIMIT \(limit)::bigint
                """, arguments).rows.map { row in
                ActionEvent(action: row[0] ?? "", event: ActionEvent.Kind(rawValue: row[1] ?? "") ?? .paused, by: row[2] ?? "",
                            reason: row[3], at: Timestamp(rawValue: row[4].flatMap { Int64($0) } ?? 0),
                            until: row[5].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)))
            }
        }
    }
}
