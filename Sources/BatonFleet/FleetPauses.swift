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
/// `FailureStreak.end` on the rows and the database's clock, as one machine's conductor decides it
/// on its table.
///
/// Lock order: a transaction that touches an action's pause row (a pause, a resume, a count of
/// its failures: the writer's, an end for needs', the reaper's) takes a transaction-scoped
/// advisory lock of each such action, in key order, before anything else (`locks(for:)`,
/// `FleetTakeover.locks`, in its opening, before its key rows); no transaction takes one after
/// another lock (but the reaper's lock, which a takeover takes first and no holder of a pause
/// lock waits for), so none waits for it while holding what its holder waits for. Readers
/// (trigger batches, starts, the feed) take none.
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

    /// A pause's columns joined as `p` to a run's row (NULLs where its action is not paused). The
    /// clock its times are compared with is read once elsewhere in the transaction (a trigger
    /// batch's `opening.clock`).
    static let joinedList = columnList.map { "p." + $0 }
    static let joined = joinedList.joined(separator: ", ")
    /// Whether run `r`'s action has a pause that holds now by the database's clock: a look's
    /// filter only (the start decides with `KeyDecision.mayStart` on the row it reads).
    static let holds = "EXISTS (SELECT 1 FROM pauses p WHERE p.action = r.action AND (p.until IS NULL OR p.until > \(FleetCooldown.databaseNow)))"

    /// The database's clock, then the pause columns of `action` (NULLs where it has none): one
    /// row always. What a hook's trigger reads first under its key's lock (`FleetHooks`): the
    /// clock its facts are decided on, read once, and the pause as kept, for the engine to say
    /// whether it holds.
    static func clockAndPause(_ action: String) -> Statement {
        ("""
         SELECT \(FleetCooldown.databaseNow), \(columnList.map { "p." + $0 }.joined(separator: ", "))
         FROM (SELECT $1::text AS action) c LEFT JOIN pauses p ON p.action = c.action
         """, [action])
    }

    /// `clockAndPause`'s row: the clock and the pause (nil: none); nil without a clock.
    static func clockAndPause(_ row: [String?]?) -> (now: Timestamp, pause: ActionPause?)? {
        guard let row, let now = row.first?.flatMap({ Int64($0) }) else { return nil }
        return (Timestamp(rawValue: now), pause(row, from: 1))
    }

    /// Every pause the fleet holds now (those whose time ran out included: `holds(at:)` says).
    static let all: Statement = ("SELECT \(columns) FROM pauses ORDER BY action", [])

    /// The pauses of `actions` (`joined`'s columns).
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
            case let .failureStreak(_, action, _): lock(action)
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
    /// (`locks(for:)`, so every end of the action is counted under it, one after the other, over
    /// every host's runs): reads the run's row (how its end left it), the database's clock, the
    /// action's count (`pause_streaks`) and its pause in one row (`streakAndPause`), and writes
    /// what the engine's rule answers (`FailureStreak.end`): the count to keep and the pause it
    /// made. Returns whether it made one.
    static func count(run: Int64, action: String, most: Int, on db: PGConnection, host: String) throws -> Bool {
        guard let row = try db.query(streakAndPause(action, run: run)).first else {
            throw PGError(message: "run \(run)'s row could not be read to count \(action)'s failures")
        }
        let at = FleetRows.runColumnCount
        guard let now = row[at].flatMap({ Int64($0) }) else {
            throw PGError(message: "the database's clock could not be read to count \(action)'s failures")
        }
        // NULL: no count kept yet (0); anything else that is not a count is an error, as a missing clock is.
        let read = row[at + 1]
        guard let failures = read.map({ Int($0) }) ?? 0 else {
            throw PGError(message: "\(action)'s count of failures could not be read")
        }
        guard let ended = FailureStreak.end(FleetRows.run(row), most: most, failures: failures,
                                            pause: pause(row, from: at + 2), at: Timestamp(rawValue: now)) else { return false }
        let results = try db.pipeline([keep(ended.failures, of: action, read: read)] + (ended.pause.map { write($0, host: host) } ?? []))
        guard results.first?.affected == 1 else {
            throw PGError(message: "\(action)'s count of failures changed since it was read (its pause lock not held?)")
        }
        return ended.pause != nil
    }

    /// Keeps `failures` as `action`'s count, compare-and-set: only where the count is still the
    /// one read (`read`, NULL: no row), so a writer that counts without the action's pause lock
    /// is an error (no row written), not a count lost.
    static func keep(_ failures: Int, of action: String, read: String?) -> Statement {
        ("""
         INSERT INTO pause_streaks (action, failures) VALUES ($1, $2::integer) ON CONFLICT (action) DO UPDATE SET failures = excluded.failures
         WHERE pause_streaks.failures IS NOT DISTINCT FROM $3::integer
         """, [action, String(failures), read])
    }

    /// Run `run`'s columns (`FleetRows.runColumns`), then the database's clock, `action`'s count
    /// of failures in a row (NULL: none kept) and its pause's columns (NULLs: none).
    static func streakAndPause(_ action: String, run: Int64) -> Statement {
        ("""
         SELECT \(FleetRows.runColumns(as: "r")), \(FleetCooldown.databaseNow), s.failures, \(columnList.map { "p." + $0 }.joined(separator: ", "))
         FROM runs r LEFT JOIN pause_streaks s ON s.action = $1 LEFT JOIN pauses p ON p.action = $1 WHERE r.id = $2
         """, [action, String(run)])
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
