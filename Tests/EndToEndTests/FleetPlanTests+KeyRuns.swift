import BatonCore
@testable import BatonFleet
import Testing

/// The reads of the runs a key row names (`FleetKeyRuns`): by the runs' primary key in the plan
/// a host keeps, even when that plan was made while `runs` was empty and never analyzed.
extension FleetPlanTests {
    /// A new fleet's database: migrated, empty, with autovacuum off so that no ANALYZE replaces
    /// a plan while a test reads it.
    static func empty() throws -> PGConnection {
        let db = try PGConnection(try Postgres.server().database())
        _ = try FleetSchema.migrate(db)
        try db.execute("ALTER TABLE runs SET (autovacuum_enabled = false); ALTER TABLE keys SET (autovacuum_enabled = false)")
        return db
    }

    /// 100,000 runs over 1,500 keys `k0`...`k1499`; key `kN` holds run 97500 + N where N is even, has
    /// runs 96000 + N and 94500 + N in line where N is a multiple of 10, and last succeeded with run
    /// 93000 + N. Run 96000 (`k0`'s line's first) is queued with a debounce window. Not analyzed.
    static func populate(_ db: PGConnection) throws {
        try db.execute("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, 'a', 'k' || (n % 1500), 'success', 'reject', 0, 'web-1', 'web-1/1/0' FROM generate_series(1, 100000) AS n;
            INSERT INTO keys (key, holder, line, last_success_run, last_success_at)
                SELECT 'k' || n, CASE WHEN n % 2 = 0 THEN 97500 + n END,
                       CASE WHEN n % 10 = 0 THEN ARRAY[96000 + n, 94500 + n] ELSE '{}' END, 93000 + n, 7
                FROM generate_series(0, 1499) AS n;
            UPDATE runs SET phase = 'queued', debounce_first = 1, debounce_until = 2, debounce_window = 1, debounce_max_wait = 1 WHERE id = 96000
            """)
    }

    /// `statement` prepared as `name` with a generic plan, the plan every execution then reuses.
    static func prepare(_ db: PGConnection, _ name: String, _ types: String, _ statement: FleetJournal.Statement) throws -> String {
        try db.execute("SET plan_cache_mode = force_generic_plan")
        try db.execute("PREPARE \(name) (\(types)) AS \(statement.sql)")
        return "\(name) (" + statement.parameters.map { "'\($0 ?? "")'" }.joined(separator: ", ") + ")"
    }

    static func plan(_ db: PGConnection, _ execute: String) throws -> String {
        try db.query("EXPLAIN EXECUTE \(execute)").rows.compactMap { $0[0] }.joined(separator: "\n")
    }

    @Test("a trigger batch reads its keys' holders, lines and last successes by the runs' primary key, even by a plan made while runs was empty")
    func keyRunsByIndex() throws {
        let db = try Self.empty()
        var action = Action(name: "a", exec: ["true"])
        action.cooldown = .seconds(1)
        let entries = (0...20).map { TriggerBatch.Entry(trigger: Trigger(action: action, key: "k\($0)", policy: .reject, params: [:], peer: nil)) }
        let opening = TriggerBatch.opening(entries)
        let lastSuccess = try #require(opening.lastSuccess)
        // Planned on the empty tables, as a new fleet's first batches plan them, then run on 100,000 runs.
        let runs = try Self.prepare(db, "batch_runs", "text[]", opening.statements[opening.runs])
        let successes = try Self.prepare(db, "batch_successes", "text[]", opening.statements[lastSuccess])
        for execute in [runs, successes] { _ = try db.query("EXECUTE \(execute)") }
        try Self.populate(db)
        for analyzed in [false, true] {
            if analyzed { try db.execute("ANALYZE runs; ANALYZE keys") }
            for execute in [runs, successes] {
                let plan = try Self.plan(db, execute)
                #expect(plan.contains("using runs_pkey on runs") && !plan.contains("Seq Scan on runs"), "analyzed: \(analyzed)\n\(plan)")
            }
        }
        // The holders of the even keys up to k20, and the lines of k0, k10 and k20.
        let read = try db.query("EXECUTE \(runs)").rows.compactMap { $0[0].flatMap { Int64($0) } }.sorted()
        let held = stride(from: Int64(0), through: 20, by: 2).map { 97_500 + $0 }
        let lined = [Int64(0), 10, 20].flatMap { [96_000 + $0, 94_500 + $0] }
        #expect(read == (held + lined).sorted())
        #expect(try db.query("EXECUTE \(successes)").rows.count == 21)
    }

    @Test("one key's debounced run and last success are read by the runs' primary key, even by a plan made while runs was empty")
    func oneKeyRunsByIndex() throws {
        let db = try Self.empty()
        let pending = try Self.prepare(db, "pending", "text", FleetDebounce.pending(of: "k0"))
        let success = try Self.prepare(db, "success", "text", FleetCooldown.lastSuccess(of: "k0"))
        for execute in [pending, success] { _ = try db.query("EXECUTE \(execute)") }
        try Self.populate(db)
        for execute in [pending, success] {
            let plan = try Self.plan(db, execute)
            #expect(plan.contains("using runs_pkey on runs") && !plan.contains("Seq Scan on runs"), "\(plan)")
        }
        #expect(try db.query("EXECUTE \(pending)").rows.map { $0[0] } == ["96000"])
        #expect(try db.query("EXECUTE \(success)").rows.map { $0[0] } == ["93000"])
    }

    @Test("a writer finds its runs' keys by the runs' primary key before it locks them, even by a plan made while runs was empty")
    func lockKeysOfRunsByIndex() throws {
        let db = try Self.empty()
        let lock = try Self.prepare(db, "lock_keys", "bigint[], text[]", FleetJournal.lockKeys(runs: [97_502, 12, 97_502], keys: ["k7", "none"]))
        _ = try db.transaction { try db.query("EXECUTE \(lock)") }
        try Self.populate(db)
        let plan = try Self.plan(db, lock)
        #expect(plan.contains("using runs_pkey on runs") && !plan.contains("Seq Scan on runs"), "\(plan)")
        // The writer's transaction keeps the generic plan (`FleetJournal.genericPlans`): its key rows by their primary key too.
        #expect(plan.contains("using keys_pkey on keys") && !plan.contains("Seq Scan on keys"), "\(plan)")
        let locked = try db.transaction { try db.query("EXECUTE \(lock)").rows.compactMap { $0[0] } }
        #expect(locked == ["k12", "k2", "k7"])
    }

    @Test("a trigger batch locks its key rows by the primary key, in key order, even by a generic plan made while keys was empty")
    func batchLocksKeysByIndex() throws {
        let db = try Self.empty()
        let entries = ["k9", "k1200", "k9", "none"].map { TriggerBatch.Entry(trigger: Trigger(action: Action(name: "a", exec: ["true"]), key: $0,
                                                                                              policy: .reject, params: [:], peer: nil)) }
        let opening = TriggerBatch.opening(entries)
        #expect(opening.statements[1] == FleetJournal.genericPlans)
        let lock = try Self.prepare(db, "batch_keys", "text[]", opening.statements[opening.slots])
        _ = try db.transaction { try db.query("EXECUTE \(lock)") }
        try Self.populate(db)
        // Keys enough that a scan of them all costs more than the index whatever the planner knows:
        // with populate's 1,500 (a dozen pages), a plan made again after they came (a reset of the
        // backend's caches, as a busy server's invalidation queue overflowing gives) rightly chose to
        // scan them all (CI run ci29e), where the plan made on the empty table used the index.
        try db.execute("INSERT INTO keys (key) SELECT 'x' || n FROM generate_series(1, 60000) AS n")
        for analyzed in [false, true] {
            if analyzed { try db.execute("ANALYZE runs; ANALYZE keys") }
            let plan = try Self.plan(db, lock)
            // By the keys' primary key (an index scan or a bitmap of it), never a scan of every key.
            #expect(plan.contains("keys_pkey") && !plan.contains("Seq Scan on keys"), "analyzed: \(analyzed)\n\(plan)")
        }
        let locked = try db.transaction { try db.query("EXECUTE \(lock)").rows.compactMap { $0[0] } }
        #expect(locked == ["k1200", "k9"])
    }
}

extension FleetPlanTests {
    @Test("the writer's start after ends finds its queued runs by index, even by a generic plan made while runs was empty")
    func endStartsByIndex() throws {
        let db = try Self.empty()
        // The writer's transaction keeps the generic plans of its statements (`FleetJournal.genericPlans`).
        let ready = try Self.prepare(db, "lock_ready", "text, bigint", FleetCoordinator.lockReady(incarnation: "web-1/1/0", count: 2))
        let rows = try Self.prepare(db, "end_starts", "text[], text, bigint",
                                    FleetCoordinator.startable(keys: ["k2", "k4"], incarnation: "web-1/1/0", count: 2))
        for execute in [ready, rows] { _ = try db.transaction { try db.query("EXECUTE \(execute)") } }
        try Self.populate(db)
        for analyzed in [false, true] {
            if analyzed { try db.execute("ANALYZE runs; ANALYZE keys") }
            for execute in [ready, rows] {
                let plan = try Self.plan(db, execute)
                #expect(!plan.contains("Seq Scan on runs") && !plan.contains("Seq Scan on keys"), "analyzed: \(analyzed)\n\(plan)")
            }
        }
    }
}
