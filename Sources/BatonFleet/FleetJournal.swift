import BatonCore
import FoundationEssentials
import Glibc

/// How the conductor's journal entries become fleet rows. Every update of a run is guarded by
/// its phase and its owner: a run another host took over (its lease ran out) is not written by
/// the host that lost it (River #1302 overwrote a finished job because its update was not).
enum FleetJournal {
    /// Applies one entry; returns whether it changed a key slot (the fleet must hear of it).
    /// An update the guard refuses is skipped and returned in `written.lost`.
    static func apply(_ entry: JournalEntry, on db: PGConnection, as me: FleetHost, _ written: inout Written) throws -> Bool {
        switch entry {
        case let .created(run, transition):
            try insert(run, transition, on: db, as: me)
            return true
        case let .transition(transition):
            guard let applied = try applied(transition, on: db, as: me) else {
                written.lost.append(transition.runID)
                return false
            }
            if transition.to.isTerminal { written.ended[transition.runID] = applied }
            return true
        case let .hooks(firing):
            // Only an end this transaction wrote fires (one the guard refused belongs to the
            // host that took the run over, whose end fires instead).
            guard let ended = written.ended[firing.run.id] else { return false }
            try FleetHooks.fire(firing, previous: ended.previousOutcome, on: db, as: me)
            return true
        case let .stopAsked(runID, stop):
            // This host's own run, stopped by its conductor (a cancel asked here): marked as another
            // host's stop is (`StopRequest.mark`, already there for a replace), for a takeover to
            // end it as asked. Its owner is this host: nobody else is told.
            try db.query("UPDATE runs SET stop = $2 WHERE id = $1 AND phase IN ('loading', 'retrying') AND incarnation = $3",
                         [String(runID), stop.recordText, me.incarnation])
            return false
        case .needs, .approval, .origin:
            // A fleet's needs are asked and decided in its own rows (`FleetNeeds`), and its approvals are
            // rows the trigger batch and a decision write (`FleetApprovals`), not written from the
            // conductor's items (a run's origin is its row's `origin_uid`, written as it is made): a conductor runs only runs it
            // adopted, decided already, and makes no wait of its own.
            return false
        case let .pause(pause):
            _ = try db.pipeline(FleetPauses.write(pause, host: me.name))
            return true
        case let .resume(action, by, at):
            _ = try db.pipeline(FleetPauses.resume(action, by: by, at: at, host: me.name))
            return true
        case let .failureStreak(run, action, most):
            // Only an end this transaction wrote counts (one the guard refused is the host's that took the run over);
            // the run's row, as that end left it, says how it ended.
            guard written.ended[run] != nil else { return false }
            return try FleetPauses.count(run: run, action: action, most: most, on: db, host: me.name)
        case let .trigger(record):
            try insert(record, host: me.name, on: db)
            return false
        case let .output(runID, tail, truncated):
            try db.query("""
                INSERT INTO outputs (run_id, tail, truncated) VALUES ($1, decode($2, 'hex'), $3)
                ON CONFLICT (run_id) DO UPDATE SET tail = excluded.tail, truncated = excluded.truncated
                """, [String(runID), hex(tail), truncated ? "true" : "false"])
            return false
        case let .outputChunks(write):
            // One round trip for the write, however many chunks it carries.
            _ = try db.pipeline(FleetOutput.statements(write, owner: me.incarnation))
            return false
        case let .processGroup(runID, pgid, identity):
            try db.query("UPDATE runs SET pgid = $1, pgid_start = $2 WHERE id = $3 AND incarnation = $4",
                         [String(pgid), identity, String(runID), me.incarnation])
            return false
        case let .delivery(delivery, runID, at):
            try db.query(insertDelivery(delivery, runID: runID, at: at, host: me.name))
            return false
        }
    }

    /// What one transaction's entries wrote, beside their rows: the runs whose updates the
    /// guard refused (taken over), and the ends it wrote, for their hooks.
    struct Written {
        var lost: [Int64] = []
        var ended: [Int64: Applied] = [:]
    }

    /// A transition the guard let through: the key's outcome before it, when it ended the run.
    struct Applied {
        var previousOutcome: Phase?
    }

    /// The record that a delivery made or joined `runID`, in the transaction that creates the run
    /// or records the trigger: a plain INSERT, so that of two hosts' transactions with the same
    /// delivery the primary key lets only one commit.
    static func insertDelivery(_ delivery: Delivery, runID: Int64, at: Timestamp, host: String) -> Statement {
        ("INSERT INTO webhook_deliveries (hook, delivery, run_id, address, host, at) VALUES ($1, $2, $3, $4, $5, $6)",
         [delivery.hook, delivery.id, String(runID), delivery.address, host, String(at.rawValue)])
    }

    /// The run a delivery made or joined, when one is recorded: one row, one column, or none.
    static func findDelivery(hook: String, delivery: String) -> Statement {
        ("SELECT run_id FROM webhook_deliveries WHERE hook = $1 AND delivery = $2", [hook, delivery])
    }

    /// One statement and its parameters, to run alone or in a pipeline.
    typealias Statement = (sql: String, parameters: [String?])

    /// The first statement of the writer's and the trigger batch's transactions: PostgreSQL's
    /// `plan_cache_mode = auto` planned their prepared statements again at each call where it
    /// judged the generic plan costlier (the writer's `lockKeys`, 0.2 ms of the server's time a
    /// plan, at every end; the start rows' read after ends: docs/benchmarks.md), while the generic
    /// plans read by the same indexes (`FleetPlanTests`). Planned once a connection.
    static let genericPlans: Statement = ("SET LOCAL plan_cache_mode = force_generic_plan", [])

    /// Locks the slot rows of `keys` and of the keys of `runs`, in key order, before the
    /// transaction writes any of their transitions. Every transaction that writes a key's
    /// transitions holds its slot row first: so one key's transitions take their ids, and
    /// commit, in the order of that row's lock, which is the order the feed delivers them in
    /// (`FeedPosition`); and two transactions that lock several keys this way cannot deadlock
    /// on them. A key with no slot row yet has had no transition. Each row is found by its
    /// primary key, one after the other in key order (a nested loop over the sorted keys: a
    /// subquery that locks is never flattened): `key = ANY (…)` over the table was planned as a
    /// scan of every key, at every write (0.36 ms a transaction with 1,500 keys in a bench run,
    /// the largest item of the server's time per run, and growing with the fleet's keys). The
    /// runs' keys are read each by the runs' primary key (`FleetKeyRuns.run`): `id = ANY (…)`,
    /// planned while `runs` was small, read every run.
    static func lockKeys(runs: [Int64], keys: [String] = []) -> Statement {
        ("""
            SELECT k.key FROM (
                SELECT DISTINCT w.key FROM unnest(ARRAY(SELECT r.key FROM unnest($1::bigint[]) AS i (id) \(FleetKeyRuns.run("i.id"))) || $2::text[]) AS w (key)
                ORDER BY w.key
            ) AS w, LATERAL (SELECT key FROM keys WHERE keys.key = w.key FOR UPDATE) AS k
            """, ["{" + runs.map(String.init).joined(separator: ",") + "}", textArray(keys)])
    }

    /// The keys of the runs of these incarnations not yet ended, and `keys` (the hook keys their
    /// ends may trigger), locked as `lockKeys` does.
    static func lockKeys(ofIncarnations incarnations: [String], keys: [String] = []) -> Statement {
        ("""
            SELECT key FROM keys WHERE key IN (SELECT key FROM runs WHERE incarnation = ANY ($1::text[]) AND phase IN ('queued', 'loading', 'retrying'))
                OR key = ANY ($2::text[])
            ORDER BY key FOR UPDATE
            """, [textArray(incarnations), textArray(keys)])
    }

    /// A PostgreSQL array literal of texts, each quoted. On the path of every end (the keys a
    /// start may take): a text without a backslash or a quote, as keys are, is taken as it is
    /// (`replacingEvery` spent 80,000 instructions on one key).
    static func textArray(_ items: [String]) -> String {
        let quoted = items.map { item -> String in
            guard item.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) else { return "\"" + item + "\"" }
            let escaped = item.replacingEvery("\\", with: "\\\\").replacingEvery("\"", with: "\\\"")
            return "\"" + escaped + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }

    /// The runs whose transitions `entries` write and the keys of the new ones among them: what `lockKeys` locks.
    static func keyed(_ entries: [JournalEntry]) -> (runs: [Int64], keys: [String]) {
        var runs: [Int64] = [], keys: [String] = []
        for entry in entries {
            switch entry {
            case let .created(run, _): keys.append(run.key)
            case let .transition(transition): runs.append(transition.runID)
            case let .hooks(firing): keys += firing.hooks.targets.values.flatMap(FleetHooks.locked)
            default: break
            }
        }
        return (runs, keys)
    }

    static func insert(_ run: RunSnapshot, _ transition: Transition, on db: PGConnection, as me: FleetHost) throws {
        // The conductor's own creation (`.created`), which a fleet host never reaches (its triggers,
        // hooks and needs are the coordinator's): no definition to store, as before version 27.
        try db.query(insertRun(run, as: me, definition: nil, revision: nil, origin: .uid(run.trigger?.uid)))
        try insertTransition(transition, on: db)
    }

    /// A new run's row; `definition` is the fingerprint of the action it was created with, `revision`
    /// that action's revision (`Action.revision`, its row in `revisions`).
    static func insertRun(_ run: RunSnapshot, as me: FleetHost, definition: String?, revision: String?, origin: Origin) -> Statement {
        ("""
            INSERT INTO runs (id, action, key, phase, policy, params, trigger_uid, trigger_gid, trigger_pid, queued_at, host, incarnation, definition, via, slot,
                              hook_run, hook_action, hook_event, origin_uid, revision)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \(origin.sql(19)), $20)
            """, [String(run.id), run.action, run.key, run.phase.rawValue, run.policy.rawValue, JSONText.object(run.params),
                  FleetRows.text(run.trigger?.uid), FleetRows.text(run.trigger?.gid), FleetRows.text(run.trigger?.pid),
                  String(run.queuedAt.rawValue), me.name, me.incarnation, definition, run.via,
                  run.slot.map { String($0.rawValue) }, FleetRows.text(run.hook?.run), run.hook?.action, run.hook?.event.rawValue,
                  origin.parameter, revision])
    }

    static func insert(_ record: TriggerRecord, host: String, on db: PGConnection) throws {
        try db.query(insertTrigger(record, host: host))
    }

    static func insertTrigger(_ record: TriggerRecord, host: String) -> Statement {
        ("""
            INSERT INTO triggers (run_id, action, key, decision, policy, uid, gid, pid, at, params, host, via)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """, [FleetRows.text(record.runID), record.action, record.key, record.decision.description, record.policy.rawValue,
                  FleetRows.text(record.peer?.uid), FleetRows.text(record.peer?.gid), FleetRows.text(record.peer?.pid),
                  String(record.at.rawValue), JSONText.object(record.params), host, record.via])
    }

    static func insertTransition(_ t: Transition, on db: PGConnection) throws {
        try db.query(try insertTransition(t))
    }

    static func insertTransition(_ t: Transition) throws -> Statement {
        guard Phase.allows(from: t.from, to: t.to) else {
            throw PGError(message: "run \(t.runID): \(t.from?.rawValue ?? "nothing") → \(t.to.rawValue) is not a legal transition")
        }
        return ("INSERT INTO transitions (run_id, seq, from_phase, to_phase, at, detail) VALUES ($1, $2, $3, $4, $5, $6)",
                [String(t.runID), String(t.seq), t.from?.rawValue, t.to.rawValue, String(t.at.rawValue), JSONText.detail(t.detail)])
    }

    /// Moves the run's row to the transition's phase if it is still where the transition starts
    /// and still owned by `owner` (nil: whoever owns it, for the reaper), records the transition,
    /// and hands a run that ended its key's slot. Returns false when the guard refused.
    static func apply(_ t: Transition, on db: PGConnection, as me: FleetHost?) throws -> Bool {
        try applied(t, on: db, as: me) != nil
    }

    /// `apply`, saying what the key's outcome was before an end; nil when the guard refused.
    static func applied(_ t: Transition, on db: PGConnection, as me: FleetHost?) throws -> Applied? {
        guard try db.query(update(t, as: me)).affected == 1 else { return nil }
        try insertTransition(t, on: db)
        guard t.to.isTerminal else { return Applied() }
        return Applied(previousOutcome: try release(run: t.runID, phase: t.to, on: db))
    }

    /// The guarded UPDATE of a transition: it changes one row, or none when the run is no longer
    /// where the transition starts, or no longer `me`'s.
    static func update(_ t: Transition, as me: FleetHost?) -> Statement {
        let d = t.detail
        let base: [String?] = [String(t.runID), t.from?.rawValue, me?.incarnation, String(t.seq)]
        let guardClause = "WHERE id = $1 AND phase = $2 AND ($3::text IS NULL OR incarnation = $3) AND last_seq = $4::int - 1"
        switch t.to {
        case .queued:
            return ("UPDATE runs SET phase = 'queued', pgid = NULL, last_seq = $4 \(guardClause)", base)
        case .loading:
            return ("""
                UPDATE runs SET phase = 'loading', started_at = coalesce(started_at, $5), attempts = $6, pgid = NULL, last_seq = $4,
                    debounce_until = NULL, rate_until = NULL, rate_at = coalesce(rate_at, \(FleetCooldown.databaseNow))
                \(guardClause)
                """, base + [String(t.at.rawValue), String(d.attempt ?? 1)])
        case .retrying:
            return ("UPDATE runs SET phase = 'retrying', exit_code = $5, signal = $6, error = $7, \(usageColumns(from: 8)), last_seq = $4 \(guardClause)",
                    base + [FleetRows.text(d.exitCode), FleetRows.text(d.signal), d.error] + usage(d))
        case .success, .failure, .cancelled:
            return ("""
                UPDATE runs SET phase = $5, ended_at = $6, exit_code = coalesce($7, exit_code), signal = coalesce($8, signal),
                    reason = $9, error = $10, pgid = NULL, progress = NULL, stop = NULL, \(usageColumns(from: 11)), last_seq = $4
                \(guardClause)
                """, base + [t.to.rawValue, String(t.at.rawValue), FleetRows.text(d.exitCode), FleetRows.text(d.signal), d.reason,
                             t.to == .success ? nil : d.error] + usage(d))
        }
    }

    /// An attempt's figures added to the run's, as `RunSnapshot.account` does (and the SQLite
    /// history): CPU times add up, a NULL leaves the column as it is, the memory peak is the larger
    /// (`greatest` ignores NULLs). Parameters `$n`, `$n+1`, `$n+2`: `usage(d)`.
    static func usageColumns(from n: Int) -> String {
        "cpu_user = coalesce(cpu_user + $\(n)::bigint, cpu_user, $\(n)::bigint), "
            + "cpu_system = coalesce(cpu_system + $\(n + 1)::bigint, cpu_system, $\(n + 1)::bigint), "
            + "memory_peak = greatest(memory_peak, $\(n + 2)::bigint)"
    }

    static func usage(_ d: TransitionDetail) -> [String?] {
        [FleetRows.text(d.cpuUser), FleetRows.text(d.cpuSystem), FleetRows.text(d.memoryPeak)]
    }

    /// The run has ended: its key's slot passes to the follow-up (or forgets it). A success
    /// becomes the key's last success in the same row, stamped with the database's clock, so
    /// that the next trigger of the key, on any host, decides its cooldown from it; a success or
    /// a failure becomes its last outcome, which a `change` hook compares with. Returns the
    /// outcome the row had before (nil: none yet).
    static func release(run: Int64, phase: Phase, on db: PGConnection) throws -> Phase? {
        guard let row = try db.query("""
            SELECT k.holder, k.follow_up, k.draining, k.line, k.key, k.last_outcome FROM keys k JOIN runs r ON r.key = k.key WHERE r.id = $1
            FOR UPDATE OF k
            """, [String(run)]).first else { return nil }
        var slot = KeySlot(row: row)
        slot.ended(run)
        var statement = storeSlot(slot, key: row[4] ?? "")
        if phase == .success {
            statement.sql = """
                UPDATE keys SET \(slotColumns), last_success_run = $6, last_success_at = \(FleetCooldown.databaseNow), last_outcome = 'success'
                WHERE key = $1
                """
            statement.parameters.append(String(run))
        } else if phase == .failure {
            statement.sql = "UPDATE keys SET \(slotColumns), last_outcome = 'failure' WHERE key = $1"
        }
        try db.query(statement)
        return row[5].flatMap(Phase.init(rawValue:))
    }

    static func store(_ slot: KeySlot, key: String, on db: PGConnection) throws {
        try db.query(storeSlot(slot, key: key))
    }

    static func storeSlot(_ slot: KeySlot, key: String) -> Statement {
        ("UPDATE keys SET \(slotColumns) WHERE key = $1", [key] + slot.rowTexts)
    }

    /// A key slot's columns set from `$2` to `$5` (`KeySlot.rowTexts`).
    static let slotColumns = "holder = $2, follow_up = $3, draining = $4::bigint[], line = $5::bigint[]"

    static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// This batond in the fleet: its host name and the identity of this process start.
public struct FleetHost: Sendable, Equatable {
    public var name: String
    public var incarnation: String
    public var lease: Duration

    public init(name: String, incarnation: String, lease: Duration) {
        self.name = name
        self.incarnation = incarnation
        self.lease = lease
    }

    /// A new incarnation of host `name`: unique per process start (Oban #862), readable in logs.
    public static func starting(name: String, lease: Duration) -> FleetHost {
        let random = (0..<6).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        return FleetHost(name: name, incarnation: "\(name)/\(getpid())/\(random)", lease: lease)
    }
}
