import BatonCore
import FoundationEssentials

/// Runs that wait for a person's yes across a fleet (schema 20, `approvals`): a run of an action
/// with `approve` is made `queued`, holding its key, with its approval row, in the transaction
/// that makes it (a trigger batch's, a hook's); no start reads it startable while the row is
/// undecided (`KeyDecision.mayStart`, `approving`). A decision, on any host, is one guarded
/// UPDATE (`WHERE verdict IS NULL`) in a transaction that holds the run's key row: the first
/// decides, every other is told how it was decided. The engine's rules decide who may
/// (`ApprovalRule.refusal`) and what a deny or a timeout does to the run (`RunMachine.Stop`,
/// written by `FleetStop` as any stop of a queued run); the rows only carry the facts.
enum FleetApprovals {
    typealias Statement = FleetJournal.Statement

    /// An approval row's columns, as `state(_:from:)` reads them.
    static let columnList = ["a.approvers", "a.until", "a.verdict", "a.decided_by", "a.decided_at", "a.reason", "a.origin_uid"]
    static let columns = columnList.joined(separator: ", ")
    static let columnCount = columnList.count

    /// A run with its last seq and its approval row (`runWithApproval`, `allWaiting`).
    enum Part: Hashable, Sendable { case seq, approval, definition }
    static let withRun = FleetSelect<Part>(run: "r", [(.seq, ["r.last_seq"]), (.approval, columnList),
                                                      (.definition, DefinitionRef.columns("r"))])

    /// The definition the run in `row` (`withRun`'s columns) was triggered with: its `approve`
    /// decides (`FleetCoordinator.definition`), on any host, whatever its config.
    static func definition(_ row: [String?]) -> DefinitionRef { DefinitionRef(withRun.columns(row, .definition)) }

    static func state(_ row: [String?], from index: Int) -> (state: ApprovalState, origin: UInt32?)? {
        guard row.count >= index + columnCount, let approvers = row[index] else { return nil }
        let int64 = { (i: Int) in row[index + i].flatMap { Int64($0) } }
        let state = ApprovalState(by: approvers.split(separator: "\n").map(String.init), until: int64(1).map(Timestamp.init(rawValue:)),
                                  verdict: row[index + 2].flatMap(ApprovalState.Verdict.init(rawValue:)), decidedBy: row[index + 3],
                                  decidedAt: int64(4).map(Timestamp.init(rawValue:)), reason: row[index + 5])
        return (state, int64(6).map { UInt32(truncatingIfNeeded: $0) })
    }

    /// Whether run `r` waits for its approval: a look's filter (the start decides with
    /// `KeyDecision.mayStart` on the row it reads, `waiting`).
    static let waits = "EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = r.id AND a.verdict IS NULL)"

    /// Whether the approval joined as `a` (NULLs where the run has none) is undecided.
    static let waiting = "(a.run_id IS NOT NULL AND a.verdict IS NULL)"

    /// The wait of new run `run` of an action with `rule`: who may approve, as the config wrote
    /// them, who made it (the origin its row was written with as it was made, `runs.origin_uid`:
    /// a trigger's uid, or the one its hook's or need's run passed on, `FleetJournal.Origin`), and
    /// when it ends by the database's clock (returned: what the trigger is answered with).
    /// Written in the transaction that makes the run, after its row.
    static func insert(_ run: Int64, action: String, _ rule: ApprovalRule) -> Statement {
        ("""
            INSERT INTO approvals (run_id, action, approvers, origin_uid, until)
            SELECT $1, $2, $3, r.origin_uid, \(FleetCooldown.databaseNow) + $4::bigint FROM runs r WHERE r.id = $1
            RETURNING until
            """, [String(run), action, rule.by.joined(separator: "\n"), rule.timeout.map { String($0.microseconds) }])
    }

    /// A decision, written only where none was (the first decides): one row changed, or none.
    /// `inTime`: only while its end has not come by the database's clock (a person's decision).
    static func decide(_ run: Int64, _ verdict: ApprovalState.Verdict, by: String?, reason: String?, inTime: Bool = false) -> Statement {
        ("""
            UPDATE approvals AS a SET verdict = $2, decided_by = $3, reason = $4, decided_at = \(FleetCooldown.databaseNow)
            WHERE run_id = $1 AND verdict IS NULL\(inTime ? " AND \(open)" : "")
            RETURNING approvers, until, verdict, decided_by, decided_at, reason, origin_uid
            """, [String(run), verdict.rawValue, by, reason])
    }

    /// A timeout, written only where the wait is undecided and its end has come by the database's clock.
    static func timeOut(_ run: Int64) -> Statement {
        ("""
            UPDATE approvals AS a SET verdict = 'timed_out', decided_at = \(FleetCooldown.databaseNow)
            WHERE run_id = $1 AND verdict IS NULL AND a.until <= \(FleetCooldown.databaseNow)
            RETURNING approvers, until, verdict, decided_by, decided_at, reason, origin_uid
            """, [String(run)])
    }

    /// A run with its approval row (NULLs where it has none), its last seq after the run's columns.
    static func runWithApproval(_ run: Int64) -> Statement {
        ("SELECT \(withRun.sql) FROM runs r LEFT JOIN approvals a ON a.run_id = r.id WHERE r.id = $1", [String(run)])
    }

    /// Whether the wait joined as `a` has not reached its end by the database's clock.
    static let open = "(a.until IS NULL OR a.until > \(FleetCooldown.databaseNow))"

    /// Every undecided wait of a queued run whose end has not come, oldest first, each with its run (`runWithApproval`'s columns).
    static let allWaiting: Statement = ("""
        SELECT \(withRun.sql) FROM approvals a JOIN runs r ON r.id = a.run_id
        WHERE a.verdict IS NULL AND r.phase = 'queued' AND \(open) ORDER BY r.id
        """, [])

    /// The undecided waits of queued runs whose end has come by the database's clock: a tick's
    /// look (by index; a run cancelled while it waited keeps its row undecided, and is not due).
    static let due: Statement = ("""
        SELECT a.run_id FROM approvals a JOIN runs r ON r.id = a.run_id
        WHERE a.verdict IS NULL AND a.until <= \(FleetCooldown.databaseNow) AND r.phase = 'queued' ORDER BY a.run_id LIMIT 100
        """, [])

    /// The undecided waits of queued runs of actions not among `asking` (those with `approve` in
    /// this host's config): a reload removed it, and they wait no more (`waived`), as on one machine.
    static func unasked(_ asking: [String]) -> Statement {
        ("""
            SELECT a.run_id FROM approvals a JOIN runs r ON r.id = a.run_id
            WHERE a.verdict IS NULL AND r.phase = 'queued' AND NOT (r.action = ANY ($1::text[])) ORDER BY a.run_id LIMIT 100
            """, [FleetJournal.textArray(asking)])
    }

    /// Run `id`'s approval: what it waits for, or how it was decided; nil where it has none.
    static func of(_ id: Int64, on db: PGConnection) throws -> ApprovalState? {
        try db.query("SELECT \(columns) FROM approvals a WHERE a.run_id = $1", [String(id)]).first.flatMap { state($0, from: 0)?.state }
    }

    /// The approvals of the runs in flight, by run.
    static func ofLiveRuns(on db: PGConnection) throws -> [Int64: ApprovalState] {
        var found: [Int64: ApprovalState] = [:]
        for row in try db.query("""
            SELECT a.run_id, \(columns) FROM approvals a JOIN runs r ON r.id = a.run_id WHERE r.phase IN ('queued', 'loading', 'retrying')
            """).rows {
            if let id = row[0].flatMap({ Int64($0) }), let state = state(row, from: 1)?.state { found[id] = state }
        }
        return found
    }

    /// The run in `row` (`runWithApproval`'s columns) with its approval, and who made it.
    static func run(_ row: [String?]) -> (run: RunSnapshot, seq: Int, origin: UInt32?) {
        var run = FleetRows.run(row)
        let found = state(row, from: withRun.range(.approval).lowerBound)
        run.approval = found?.state
        return (run, Int(withRun.value(row, .seq) ?? "") ?? 1, found?.origin)
    }
}
