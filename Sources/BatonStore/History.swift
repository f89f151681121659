import BatonCore
import FoundationEssentials
import Glibc

/// Queries over the history, on a connection the caller owns (the store's reader, or a
/// read-only connection of the CLI when the daemon is down).
public struct History {
    public let connection: Connection

    public init(connection: Connection) {
        self.connection = connection
    }

    /// Opens a history file read-only, for queries while the daemon is down or busy writing.
    public static func openReadOnly(path: String) throws -> History {
        if let why = unreadable(path) { throw StoreError.cannotOpen(path: path, DatabaseError(code: 14, message: why)) }
        let connection: Connection
        do {
            connection = try Connection(path: path, readOnly: true)
            try connection.execute("PRAGMA busy_timeout = 5000; PRAGMA query_only = 1")
            let version = try Migrator.version(of: connection)
            if version > Migrator.latestVersion {
                throw StoreError.schemaTooNew(path: path, found: version, supported: Migrator.latestVersion)
            }
        } catch let error as DatabaseError {
            throw Store.classify(error, path: path)
        }
        return History(connection: connection)
    }

    /// Why this process cannot read the file at `path`, in the system's words (`no such file or
    /// directory`, `permission denied`), or nil when it can. (`FileManager.fileExists` said "no
    /// such file" of a file in a directory the user may not enter: /var/lib/baton is 0750.)
    public static func unreadable(_ path: String) -> String? {
        var info = stat()
        let failed = stat(path, &info) != 0 || access(path, R_OK) != 0
        guard failed else { return nil }
        let words = String(cString: strerror(errno))
        return words.prefix(1).lowercased() + words.dropFirst()
    }

    static let runColumns = """
        id, action, key, phase, policy, params, trigger_uid, trigger_gid, trigger_pid, queued_at, started_at,
        ended_at, attempts, exit_code, signal, reason, error, cpu_user, cpu_system, memory_peak, via, slot,
        hook_run, hook_action, hook_event
        """
    /// How many columns `runColumns` has; a query's own columns follow them.
    static let runColumnCount: Int32 = 25

    static func decodeRun(_ s: Statement) -> RunSnapshot {
        let peer: Peer? = s.int64(6).map { uid in
            Peer(uid: UInt32(truncatingIfNeeded: uid), gid: UInt32(truncatingIfNeeded: s.int64(7) ?? 0), pid: Int32(truncatingIfNeeded: s.int64(8) ?? 0))
        }
        var run = RunSnapshot(
            id: s.int64(0)!, action: s.string(1) ?? "", key: s.string(2) ?? "",
            phase: Phase(rawValue: s.string(3) ?? "") ?? .failure, policy: Policy(rawValue: s.string(4) ?? "") ?? .reject,
            params: JSONText.params(s.string(5)), trigger: peer,
            queuedAt: Timestamp(rawValue: s.int64(9) ?? 0), startedAt: s.int64(10).map(Timestamp.init(rawValue:)),
            endedAt: s.int64(11).map(Timestamp.init(rawValue:)), attempts: Int(s.int64(12) ?? 0),
            exitCode: s.int64(13).map { Int32(truncatingIfNeeded: $0) }, signal: s.int64(14).map { Int32(truncatingIfNeeded: $0) },
            reason: s.string(15), error: s.string(16))
        run.update { run in
            run.cpuUser = s.int64(17)
            run.cpuSystem = s.int64(18)
            run.memoryPeak = s.int64(19)
            run.via = s.string(20)
            run.slot = s.int64(21).map(Timestamp.init(rawValue:))
            if let firing = s.int64(22), let event = s.string(24).flatMap(HookEvent.init(rawValue:)) {
                run.hook = HookCause(run: firing, action: s.string(23) ?? "", event: event)
            }
        }
        return run
    }

    /// A history query as index-friendly SQL, one query per part of the filter (`parts`).
    static func queries(_ filter: HistoryFilter) -> [(String, [DatabaseValue])] {
        parts(filter).map(query)
    }

    /// The SQL and arguments of a history query. Every standard filter is served by an index:
    /// actions by `runs_by_action`, phases by `runs_by_phase`, a time window by `runs_by_queued_at`.
    static func query(_ filter: HistoryFilter) -> (String, [DatabaseValue]) {
        let (clauses, conditionArguments) = conditions(filter)
        var arguments = conditionArguments
        let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        let sql = "SELECT \(Self.runColumns) FROM runs \(whereClause) ORDER BY id \(filter.reverse ? "ASC" : "DESC") LIMIT ?"
        arguments.append(.integer(Int64(max(filter.limit, 0))))
        return (sql, arguments)
    }

    /// The conditions on `runs` that select the filter's runs (its limit and order aside).
    static func conditions(_ filter: HistoryFilter) -> (clauses: [String], arguments: [DatabaseValue]) {
        var clauses: [String] = []
        var arguments: [DatabaseValue] = []
        if !filter.actions.isEmpty {
            clauses.append("action IN (\(Array(repeating: "?", count: filter.actions.count).joined(separator: ", ")))")
            arguments += filter.actions.map { .text($0) }
        }
        if !filter.phases.isEmpty {
            clauses.append("phase IN (\(Array(repeating: "?", count: filter.phases.count).joined(separator: ", ")))")
            arguments += filter.phases.map { .text($0.rawValue) }
        }
        // Ids grow with queue time, so a time window is also an id range, found with one seek on
        // runs_by_queued_at per bound (the first run queued in the window, the last before its end;
        // not min()/max(id), which would walk the whole window): the rows are then read by primary
        // key, newest first, up to the limit.
        if let since = filter.since {
            clauses.append("queued_at >= ? AND id >= coalesce((SELECT id FROM runs WHERE queued_at >= ? ORDER BY queued_at LIMIT 1), 9223372036854775807)")
            arguments += [.integer(since.rawValue), .integer(since.rawValue)]
        }
        if let until = filter.until {
            clauses.append("queued_at < ? AND id <= coalesce((SELECT id FROM runs WHERE queued_at < ? ORDER BY queued_at DESC LIMIT 1), 0)")
            arguments += [.integer(until.rawValue), .integer(until.rawValue)]
        }
        // A page goes on from the last id of the one before, on the primary key's order.
        if let after = filter.after {
            clauses.append(filter.reverse ? "id > ?" : "id < ?")
            arguments.append(.integer(after))
        }
        for (name, value) in filter.params.sorted(by: { $0.key < $1.key }) {
            clauses.append("json_extract(params, ?) = ?")
            arguments += [.text("$.\"\(name.replacingEvery("\"", with: ""))\""), .text(value)]
        }
        return (clauses, arguments)
    }

    /// One run with its transitions, the triggers that hit it, and its output; nil if unknown.
    public func run(_ id: Int64) throws -> RunDetail? {
        let row = try connection.withStatement("SELECT \(Self.runColumns) FROM runs WHERE id = ?") { statement -> RunSnapshot? in
            try statement.bind([.integer(id)])
            return try statement.step() ? Self.decodeRun(statement) : nil
        }
        guard let found = row else { return nil }
        let run = try withApproval(withNeeds(found))
        let transitions = try connection.withStatement(
            "SELECT seq, from_phase, to_phase, at, detail FROM transitions WHERE run_id = ? ORDER BY seq"
        ) { statement in
            try statement.bind([.integer(id)])
            var list: [Transition] = []
            while try statement.step() {
                list.append(Transition(
                    runID: id, seq: Int(statement.int64(0) ?? 0), from: statement.string(1).flatMap(Phase.init(rawValue:)),
                    to: Phase(rawValue: statement.string(2) ?? "") ?? .failure, at: Timestamp(rawValue: statement.int64(3) ?? 0),
                    detail: JSONText.detail(statement.string(4))))
            }
            return list
        }
        let triggers = try connection.withStatement(
            "SELECT action, key, decision, policy, uid, gid, pid, at, params, via FROM triggers WHERE run_id = ? ORDER BY id"
        ) { statement in
            try statement.bind([.integer(id)])
            var list: [TriggerRecord] = []
            while try statement.step() {
                let peer = statement.int64(4).map { Peer(uid: UInt32(truncatingIfNeeded: $0), gid: UInt32(truncatingIfNeeded: statement.int64(5) ?? 0), pid: Int32(truncatingIfNeeded: statement.int64(6) ?? 0)) }
                list.append(TriggerRecord(
                    runID: id, action: statement.string(0) ?? "", key: statement.string(1) ?? "", decision: TriggerRecord.Decision(statement.string(2) ?? "") ?? .rejected,
                    policy: Policy(rawValue: statement.string(3) ?? "") ?? .reject, peer: peer,
                    at: Timestamp(rawValue: statement.int64(7) ?? 0), params: JSONText.params(statement.string(8)), via: statement.string(9)))
            }
            return list
        }
        let output = try connection.withStatement("SELECT tail, truncated FROM outputs WHERE run_id = ?") { statement -> (Data, Bool)? in
            try statement.bind([.integer(id)])
            guard try statement.step() else { return nil }
            if case let .blob(bytes) = statement.value(0) { return (Data(bytes), statement.int64(1) == 1) }
            return (Data(), statement.int64(1) == 1)
        }
        // The tail comes from the run's chunks where it kept them; runs from before them have the old row.
        if let tail = try outputTail(of: id) {
            var detail = RunDetail(run: run, transitions: transitions, triggers: triggers, output: Data(tail.bytes), outputTruncated: tail.truncated)
            detail.hookRuns = try hookRuns(of: id)
            detail.outputTotals = try outputTotals(of: id)
            return detail
        }
        var detail = RunDetail(run: run, transitions: transitions, triggers: triggers, output: output?.0, outputTruncated: output?.1 ?? false)
        detail.hookRuns = try hookRuns(of: id)
        return detail
    }

    /// Requests refused for lack of permission (recorded as triggers with a `denied …` decision)
    /// and triggers refused by a rate limit (`rate limited`), newest first.
    public func denied(limit: Int = 50) throws -> [TriggerRecord] {
        try connection.withStatement("""
            SELECT run_id, action, key, decision, policy, uid, gid, pid, at, params, via FROM triggers
            WHERE decision IN (\(TriggerRecord.Decision.refusals.map { _ in "?" }.joined(separator: ", "))) ORDER BY id DESC LIMIT ?
            """) { statement in
            try statement.bind(TriggerRecord.Decision.refusals.map { .text($0.description) } + [.integer(Int64(max(limit, 0)))])
            var list: [TriggerRecord] = []
            while try statement.step() {
                let peer = statement.int64(5).map {
                    Peer(uid: UInt32(truncatingIfNeeded: $0), gid: UInt32(truncatingIfNeeded: statement.int64(6) ?? 0),
                         pid: Int32(truncatingIfNeeded: statement.int64(7) ?? 0))
                }
                list.append(TriggerRecord(runID: statement.int64(0), action: statement.string(1) ?? "", key: statement.string(2) ?? "",
                                          decision: TriggerRecord.Decision(statement.string(3) ?? "") ?? .rejected, policy: Policy(rawValue: statement.string(4) ?? "") ?? .reject,
                                          peer: peer, at: Timestamp(rawValue: statement.int64(8) ?? 0), params: JSONText.params(statement.string(9)),
                                          via: statement.string(10)))
            }
            return list
        }
    }

    /// Every action name in the history.
    public func actionNames() throws -> [String] {
        try connection.withStatement("SELECT DISTINCT action FROM runs") { statement in
            var names: [String] = []
            while try statement.step() { if let name = statement.string(0) { names.append(name) } }
            return names
        }
    }

    /// The last run of each action that ended, by action name.
    public func lastEnded() throws -> [RunSnapshot] {
        return try actionNames().compactMap { action in
            try connection.withStatement("""
                SELECT \(Self.runColumns) FROM runs
                WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') ORDER BY id DESC LIMIT 1
                """) { statement in
                try statement.bind([.text(action)])
                return try statement.step() ? Self.decodeRun(statement) : nil
            }
        }
    }

    /// The durations of the latest successful runs of each action (microseconds, oldest first),
    /// at most `limit` each: the seed of estimated progress.
    public func recentDurations(of actions: [String], limit: Int = DurationEstimates.window) throws -> [String: [Int64]] {
        var result: [String: [Int64]] = [:]
        for action in actions {
            let list = try connection.withStatement("""
                SELECT ended_at - started_at FROM runs
                WHERE action = ? AND phase = 'success' AND started_at IS NOT NULL AND ended_at IS NOT NULL ORDER BY ended_at DESC LIMIT ?
                """) { statement in
                try statement.bind([.text(action), .integer(Int64(limit))])
                var durations: [Int64] = []
                while try statement.step() { if let micros = statement.int64(0) { durations.append(micros) } }
                return durations
            }
            if !list.isEmpty { result[action] = list.reversed() }
        }
        return result
    }

    /// What a previous daemon left: the next free id and the runs not yet ended, oldest first.
    public func recoverableState() throws -> RecoverableState {
        let maxID = try connection.scalar("SELECT max(coalesce((SELECT max(id) FROM runs), 0), coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'runs'), 0))")?.int64 ?? 0
        let unfinished = try connection.withStatement("""
            SELECT \(Self.runColumns), pgid, pgid_start, (SELECT max(seq) FROM transitions t WHERE t.run_id = runs.id),
                   (SELECT total FROM output_totals o WHERE o.run_id = runs.id),
                   (SELECT at + coalesce(json_extract(detail, '$.backoff'), 0) FROM transitions t
                    WHERE t.run_id = runs.id AND runs.phase = 'retrying' AND t.to_phase = 'retrying' ORDER BY seq DESC LIMIT 1), origin_uid,
                   CASE WHEN runs.phase <> 'queued' THEN (SELECT n.id FROM runs n JOIN transitions t ON t.run_id = n.id AND t.seq = 1
                        WHERE n.action = runs.action AND n.id > runs.id AND n.key = runs.key AND n.policy = 'replace' AND EXISTS (SELECT 1 FROM json_each(t.detail, '$.replaces') j WHERE j.value = runs.id)
                        ORDER BY n.id LIMIT 1) END, stop
            FROM runs WHERE phase IN ('queued', 'loading', 'retrying') ORDER BY id
            """) { statement in
            var list: [UnfinishedRun] = []
            while try statement.step() {
                list.append(UnfinishedRun(
                    run: Self.decodeRun(statement), lastSeq: Int(statement.int64(Self.runColumnCount + 2) ?? 1),
                    pgid: statement.int64(Self.runColumnCount).map { Int32(truncatingIfNeeded: $0) },
                    pgidIdentity: statement.string(Self.runColumnCount + 1)))
                list[list.count - 1].outputTotal = statement.int64(Self.runColumnCount + 3)
                list[list.count - 1].retryDue = statement.int64(Self.runColumnCount + 4).map(Timestamp.init(rawValue:))
                list[list.count - 1].origin = statement.int64(Self.runColumnCount + 5).map { UInt32(truncatingIfNeeded: $0) }
                // A stop asked before the previous daemon stopped: its row's `stop` (schema 18), else a
                // replace's, which its replacing run's creation names (a row written before schema 18).
                // Looked for among its action's later runs made by a replace (`runs_by_action`): a key is
                // its action's, and only such a run names others in `replaces` (1M runs, 50 actions, 20 old
                // unfinished runs: 0.1 s of CPU, against 0.9 s scanning every later run).
                list[list.count - 1].stop = statement.string(Self.runColumnCount + 7).map(RunMachine.Stop.init(recordText:))
                    ?? statement.int64(Self.runColumnCount + 6).map { RunMachine.Stop.replaced(by: $0) }
            }
            return list
        }
        return RecoverableState(nextRunID: maxID + 1, unfinished: try unfinished.map(withHookContext).map(withNeeds).map(withApproval), pauses: try pauses())
    }

    /// The pauses and resumes of the actions `filter` names (all without), inside its window
    /// (`since`, `until`), newest first (oldest first with `reverse`), at most its limit.
    public func events(_ filter: HistoryFilter) throws -> [ActionEvent] {
        var clauses = ["1"], arguments: [DatabaseValue] = []
        if !filter.actions.isEmpty {
            clauses.append("action IN (\(filter.actions.map { _ in "?" }.joined(separator: ", ")))")
            arguments += filter.actions.map { .text($0) }
        }
        if let since = filter.since {
            clauses.append("at >= ?")
            arguments.append(.integer(since.rawValue))
        }
        if let until = filter.until {
            clauses.append("at < ?")
            arguments.append(.integer(until.rawValue))
        }
        let order = filter.reverse ? "ASC" : "DESC"
        let sql = "SELECT action, event, by_whom, reason, at, until, hold FROM pause_events WHERE \(clauses.joined(separator: " AND ")) "
            + "ORDER BY at \(order), id \(order) LIMIT ?"
        return try connection.withStatement(sql) { statement in
            try statement.bind(arguments + [.integer(Int64(max(filter.limit, 0)))])
            var list: [ActionEvent] = []
            while try statement.step() {
                list.append(ActionEvent(action: statement.string(0) ?? "", event: ActionEvent.Kind(rawValue: statement.string(1) ?? "") ?? .paused,
                                        by: statement.string(2) ?? "", reason: statement.string(3), at: Timestamp(rawValue: statement.int64(4) ?? 0),
                                        until: statement.int64(5).map(Timestamp.init(rawValue:)), hold: statement.int64(6) == 1))
            }
            return list
        }
    }

    /// The actions paused when the last daemon stopped (`pauses`, migrations 11 and 15).
    public func pauses() throws -> [ActionPause] {
        try connection.withStatement("SELECT action, paused_by, reason, at, until, hold FROM pauses ORDER BY action") { statement in
            var list: [ActionPause] = []
            while try statement.step() {
                list.append(ActionPause(action: statement.string(0) ?? "", by: statement.string(1) ?? "", reason: statement.string(2) ?? "",
                                        at: Timestamp(rawValue: statement.int64(3) ?? 0), until: statement.int64(4).map(Timestamp.init(rawValue:)),
                                        hold: statement.int64(5) == 1))
            }
            return list
        }
    }

    /// A queued hook run is told what fired it from that run's row and output, as it was told
    /// before a crash.
    private func withHookContext(_ unfinished: UnfinishedRun) throws -> UnfinishedRun {
        guard let cause = unfinished.run.hook, let firing = try run(cause.run) else { return unfinished }
        var unfinished = unfinished
        unfinished.hook = HookContext(cause: cause, run: firing.run, output: firing.output.map { Array($0) } ?? [])
        return unfinished
    }

    /// The runs the hooks of run `id` made, oldest first.
    func hookRuns(of id: Int64) throws -> [RunSnapshot] {
        try connection.withStatement("SELECT \(Self.runColumns) FROM runs WHERE hook_run = ? ORDER BY id") { statement in
            try statement.bind([.integer(id)])
            var list: [RunSnapshot] = []
            while try statement.step() { list.append(Self.decodeRun(statement)) }
            return list
        }
    }
}
