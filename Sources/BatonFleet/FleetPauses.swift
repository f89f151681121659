import BatonCore
import FoundationEssentials

/// Paused actions across a fleet (schema 17, `pauses`, `pause_events`, `pause_streaks`): a pause
/// made on any host is a row every host's trigger batch reads in its transaction (`KeyDecision`
/// refuses the trigger with it) and every start reads with its run (`KeyDecision.mayStart`), by
/// the database's clock, so no host runs a paused action once the pause is committed (a trigger
/// or start decided before that commit is ordered before the pause); each host's conductor
/// learns the rows from its feed (`pausesSeen`, for `status`, metrics and the dashboard).
/// `pauseAfterFailures` is counted over every host's runs, in the transaction that writes a
/// success or a failure (`JournalEntry.failureStreak`, `count`), and decided by the engine's
/// `ActionPause.afterFailures`.
///
/// Lock order: a transaction that touches an action's pause row (a pause, a resume, a count of
/// its failures: the writer's) takes a transaction-scoped advisory lock of each such action, in
/// key order, before anything else (`locks(for:)`, in its opening, before its key rows); no
/// transaction takes one after another lock, so none waits for it while holding what its holder
/// waits for. Readers (trigger batches, starts, the feed) take none.
enum FleetPauses {
    typealias Statement = FleetJournal.Statement

    /// A pause row's columns, as `pause(_:)` reads them.
    static let columnList = ["action", "paused_by", "reason", "at", "until", "hold"]
    static let columns = columnList.joined(separator: ", ")
    /// How many columns `columns` reads.
    static let count = columnList.count

    static func pause(_ row: [String?], from index: Int = 0) -> ActionPause? {
        guard row.count >= index + count, let action = row[index], let by = row[index + 1],
              let at = row[index + 3].flatMap({ Int64($0) }) else { return nil }
        return ActionPause(action: action, by: by, reason: row[index + 2] ?? "", at: Timestamp(rawValue: at),
                           until: row[index + 4].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)), hold: row[index + 5] == "t")
    }

    /// A pause's columns joined as `p` to a run's row (NULLs where its action is not paused), then
    /// the database's clock (what the pause's times are compared with).
    static let joinedList = columnList.map { "p." + $0 } + [FleetCooldown.databaseNow]
    static let joined = joinedList.joined(separator: ", ")
    /// How many columns `joined` reads: the pause's and the clock.
    static let joinedCount = joinedList.count

    /// Whether the pause `joined` read at `index` holds, by the database's clock read with it.
    static func holds(_ row: [String?], from index: Int) -> Bool {
        guard let pause = pause(row, from: index), let now = row[index + count].flatMap({ Int64($0) }) else { return false }
        return pause.holds(at: Timestamp(rawValue: now))
    }

    /// Whether run `r`'s action has a pause that holds now by the database's clock: a look's
    /// filter only (the start decides with `KeyDecision.mayStart` on the row it reads).
    static let holds = "EXISTS (SELECT 1 FROM pauses p WHERE p.action = r.action AND (p.until IS NULL OR p.until > \(FleetCooldown.databaseNow)))"

    /// Every pause the fleet holds now (those whose time ran out included: `holds(at:)` says).
    static let all: Statement = ("SELECT \(columns) FROM pauses ORDER BY action", [])

    /// The pauses of `actions`, each with the database's clock (`joined`'s columns).
    static func of(_ actions: [String]) -> Statement {
        ("SELECT \(joined) FROM pauses p WHERE p.action = ANY ($1::text[])", [FleetJournal.textArray(actions)])
    }

    static func read(on db: PGConnection) throws -> [ActionPause] {
        try db.query(all).rows.compactMap { pause($0) }
    }

    /// The advisory lock of one action's pause.
    static func lock(_ action: String) -> FleetAdvisoryLock { FleetAdvisoryLock("baton pause", action) }

    /// The pause locks an item's entries need, in key order: the first statements of its transaction.
    static func locks(for entries: [JournalEntry]) -> [Statement] {
        FleetAdvisoryLock.statements(entries.compactMap { entry -> FleetAdvisoryLock? in
            switch entry {
            case let .pause(pause): lock(pause.action)
            case let .resume(action, _, _): lock(action)
            case let .failureStreak(_, action, _, _): lock(action)
            default: nil
            }
        })
    }

    /// A pause made (or its end or reason moved), its row stamped by the database's clock (what
    /// every host's decisions compare with), its event (by the pausing host's clock: the same
    /// row however often a lost connection sends the item again), and the action's failures in
    /// a row counted from zero again.
    static func write(_ pause: ActionPause, host: String) -> [Statement] {
        let length = pause.until.map { String(($0 - pause.at).microseconds) }
        return [("""
                 INSERT INTO pauses (action, paused_by, reason, at, until, hold)
                 SELECT $1, $2, $3, n, n + $4::bigint, $5::boolean FROM (SELECT \(FleetCooldown.databaseNow) AS n) c
                 ON CONFLICT (action) DO UPDATE SET paused_by = excluded.paused_by, reason = excluded.reason, at = excluded.at,
                     until = excluded.until, hold = excluded.hold
                 """, [pause.action, pause.by, pause.reason, length, pause.hold ? "true" : "false"]),
                ("""
                 INSERT INTO pause_events (action, event, by_whom, reason, at, until, host, hold) VALUES ($1, 'paused', $2, $3, $4, $5, $6, $7::boolean)
                 ON CONFLICT DO NOTHING
                 """, [pause.action, pause.by, pause.reason, String(pause.at.rawValue), pause.until.map { String($0.rawValue) }, host,
                       pause.hold ? "true" : "false"]),
                resetStreak(pause.action)]
    }

    /// A pause ended by `by`: its row gone, and its event written only where there was one (two
    /// hosts' resumes of one pause make one event).
    static func resume(_ action: String, by: String, at: Timestamp, host: String) -> [Statement] {
        [("""
          WITH ended AS (DELETE FROM pauses WHERE action = $1 RETURNING action)
          INSERT INTO pause_events (action, event, by_whom, at, host) SELECT action, 'resumed', $2, $3, $4 FROM ended
          ON CONFLICT DO NOTHING
          """, [action, by, String(at.rawValue), host]),
         resetStreak(action)]
    }

    static func resetStreak(_ action: String) -> Statement {
        ("UPDATE pause_streaks SET failures = 0 WHERE action = $1", [action])
    }

    /// In the transaction that wrote run `run`'s end, holding its action's pause lock
    /// (`locks(for:)`): a success counts the action's failures in a row from zero again, a
    /// failure adds one (`pause_streaks`, over every host's runs: every end of the action is
    /// counted under the lock, one after the other); then the engine decides whether they pause
    /// it (`ActionPause.afterFailures`). Returns whether it did.
    static func count(run: Int64, action: String, most: Int, failed: Bool, on db: PGConnection, host: String) throws -> Bool {
        guard failed else {
            _ = try db.query("""
                INSERT INTO pause_streaks (action, failures) VALUES ($1, 0) ON CONFLICT (action) DO UPDATE SET failures = 0
                """, [action])
            return false
        }
        let read = try db.pipeline([
            ("""
             INSERT INTO pause_streaks (action, failures) VALUES ($1, 1)
             ON CONFLICT (action) DO UPDATE SET failures = pause_streaks.failures + 1 RETURNING failures
             """, [action]),
            ("SELECT \(columns), \(FleetCooldown.databaseNow) FROM pauses WHERE action = $1", [action]),
            ("SELECT \(FleetRows.runColumns) FROM runs WHERE id = $1", [String(run)]),
        ])
        guard let streak = read[0].first?[0].flatMap({ Int($0) }), let row = read[2].first else { return false }
        let paused = read[1].first.flatMap { row in
            pause(row).map { $0.holds(at: Timestamp(rawValue: row[count].flatMap { Int64($0) } ?? 0)) }
        } ?? false
        guard let made = ActionPause.afterFailures(streak: streak, most: most, last: FleetRows.run(row), paused: paused, at: .now) else {
            return false
        }
        _ = try db.pipeline(write(made, host: host))
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
                SELECT action, event, by_whom, reason, at, until, hold FROM pause_events \(whereClause)
                ORDER BY id \(order) LIMIT \(limit)::bigint
                """, arguments).rows.map { row in
                ActionEvent(action: row[0] ?? "", event: ActionEvent.Kind(rawValue: row[1] ?? "") ?? .paused, by: row[2] ?? "",
                            reason: row[3], at: Timestamp(rawValue: row[4].flatMap { Int64($0) } ?? 0),
                            until: row[5].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)), hold: row[6] == "t")
            }
        }
    }
}
