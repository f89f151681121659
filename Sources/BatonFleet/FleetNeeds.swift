import BatonCore

/// Runs that need other runs (`needs`) across a fleet (schema 21). A new run of an action with
/// needs is written `needs = 'asking'` and may not start (`met`, in every start's query). Its
/// owner triggers each needed action through the fleet's trigger path, as one machine's
/// conductor does (`FleetCoordinator.askNeeds`), and writes the runs it waits for (`write`):
/// `waiting`. Whichever host's feed then sees every needed run succeed, or one end otherwise,
/// decides the wait with the engine's rule (`NeedBook.outcome`) on the rows: one guarded update
/// of the waiting run's row, holding its key's row (`decide`), so a wait is decided once however
/// many hosts see the end, and by a survivor when the host that asked is gone.
enum FleetNeeds {
    /// The start gate every start's query adds (runs as `r`): a run whose needs are not met does not start.
    static let met = "(r.needs IS NULL OR r.needs = 'met')"

    /// A new run of an action with needs: it may not start before they are asked and met.
    static func asking(_ run: Int64) -> FleetJournal.Statement {
        ("UPDATE runs SET needs = 'asking' WHERE id = $1", [String(run)])
    }

    /// This host's queued runs whose needs are not asked yet: none that waits for its approval
    /// (asked once approved, as one machine does: a denied run never ran its needs; the
    /// decision's NOTIFY wakes the tick). Each row's last two columns are the run's definition (`DefinitionRef`).
    static func unasked(incarnation: String) -> FleetJournal.Statement {
        ("""
         SELECT \(FleetRows.runColumns), \(DefinitionRef.columns().joined(separator: ", ")) FROM runs WHERE incarnation = $1 AND phase = 'queued' AND needs = 'asking'
         AND NOT EXISTS (SELECT 1 FROM approvals a WHERE a.run_id = runs.id AND a.verdict IS NULL) ORDER BY id
         """, [incarnation])
    }

    /// Every waiting run's needs, as the rows say now: (waiting run, action, needed run, its phase, its reason), in order.
    static let waitingRows = """
        SELECT n.run_id, n.action, n.needed_run, r.phase, r.reason FROM runs w JOIN run_needs n ON n.run_id = w.id
        LEFT JOIN runs r ON r.id = n.needed_run
        WHERE w.needs = 'waiting' AND w.phase = 'queued' ORDER BY n.run_id, n.position
        """

    /// `waitingRows` of the waits the rows can decide now (`NeedBook.outcome`): every needed run
    /// ended, or one ended other than `success` or gone. A tick reads only these.
    static let decidableRows = """
        SELECT n.run_id, n.action, n.needed_run, r.phase, r.reason FROM runs w JOIN run_needs n ON n.run_id = w.id
        LEFT JOIN runs r ON r.id = n.needed_run
        WHERE w.needs = 'waiting' AND w.phase = 'queued'
          AND (NOT EXISTS (SELECT 1 FROM run_needs m JOIN runs q ON q.id = m.needed_run
                           WHERE m.run_id = w.id AND q.phase IN ('queued', 'loading', 'retrying'))
               OR EXISTS (SELECT 1 FROM run_needs m LEFT JOIN runs q ON q.id = m.needed_run
                          WHERE m.run_id = w.id AND (q.id IS NULL OR q.phase IN ('failure', 'cancelled'))))
        ORDER BY n.run_id, n.position
        """

    /// One needed run from a row of (action, needed run, phase, reason): one gone from the
    /// history (pruned) counts as cancelled, as one machine's history tells it.
    static func needed(_ row: ArraySlice<String?>) -> NeededRun {
        let values = Array(row)
        let phase = values[2].flatMap(Phase.init(rawValue:))
        return NeededRun(action: values[0] ?? "", run: values[1].flatMap { Int64($0) } ?? 0, phase: phase ?? .cancelled,
                         reason: phase == nil ? "pruned" : values[3])
    }

    /// The waits in `waitingRows`' rows, each run's needs in order.
    static func waits(_ rows: [[String?]]) -> [(run: Int64, needs: [NeededRun])] {
        var waits: [(run: Int64, needs: [NeededRun])] = []
        for row in rows {
            guard let run = row[0].flatMap({ Int64($0) }) else { continue }
            if waits.last?.run != run { waits.append((run, [])) }
            waits[waits.count - 1].needs.append(needed(row[1...]))
        }
        return waits
    }

    /// The waits the rows decide now, by the engine's rule (`NeedBook.outcome`), oldest waiting run first.
    static func decided(_ waits: [(run: Int64, needs: [NeededRun])]) -> [(run: Int64, outcome: NeedBook.Outcome)] {
        waits.compactMap { wait in NeedBook.outcome(of: wait.needs).map { (wait.run, $0) } }
    }

    /// Decides run `id`'s wait, in a transaction that holds its key's row: the one update from
    /// `waiting` to `met` or `failed` (nothing when another host decided it first), the outcome
    /// each needed run had kept beside it, and for `failed` the run's end (`failure`, never
    /// started, `end`: hooks fired, the failure counted). `askAgain` (a need stopped by a host's
    /// shutdown) sets it back to `asking`: its owner asks that need again, and keeps the other
    /// runs it waits for (`kept`), as one machine's next start does. `definition`: the action a run
    /// was triggered with, by its name and stored definition (`FleetCoordinator.definition`): its failure's
    /// hooks and count. Returns whether this call decided it.
    @discardableResult
    static func decide(_ id: Int64, _ outcome: NeedBook.Outcome, on db: PGConnection, as me: FleetHost,
                       definition: (_ name: String, _ ref: DefinitionRef) throws -> Action?) throws -> Bool {
        var action: Action?
        if case .failed = outcome, let row = try db.query("SELECT \((["action"] + DefinitionRef.columns()).joined(separator: ", ")) FROM runs WHERE id = $1",
                                                              [String(id)]).first,
           let name = row[0] {
            action = try definition(name, DefinitionRef(row.dropFirst()))
        }
        return try FleetCoordinator.retrying {
            try db.transaction(opening: keyLocks(id, action)) { _ in
                let state = switch outcome { case .met: "met" case .failed: "failed" case .askAgain: "asking" }
                guard try db.query("UPDATE runs SET needs = $2 WHERE id = $1 AND phase = 'queued' AND needs = 'waiting'",
                                   [String(id), state]).affected == 1 else { return false }
                if case .askAgain = outcome {
                    try db.execute("NOTIFY baton")
                    return true
                }
                try db.query("""
                    UPDATE run_needs n SET phase = r.phase, reason = r.reason FROM runs r WHERE n.run_id = $1 AND r.id = n.needed_run
                    """, [String(id)])
                if case let .failed(message) = outcome { try end(id, message, on: db, as: me, action) }
                try db.execute("NOTIFY baton")
                return true
            }
        }
    }

    /// The needs of run `id` asked (`needed`, in its action's order), written by its owner while
    /// it is still `asking`: `waiting` (or `met` with nothing to wait for), or, when one could not
    /// be triggered (`failure`), `failed` and the run ended so. Nothing when it is no longer asking here.
    static func write(_ id: Int64, needed: [NeededRun], failure: String?, on db: PGConnection, as host: FleetHost,
                      action: Action?) throws {
        let me = host.incarnation
        try FleetCoordinator.retrying {
            try db.transaction(opening: keyLocks(id, action)) { _ in
                let state = failure != nil ? "failed" : needed.isEmpty ? "met" : "waiting"
                guard try db.query("""
                    UPDATE runs SET needs = $3 WHERE id = $1 AND incarnation = $2 AND phase = 'queued' AND needs = 'asking'
                    """, [String(id), me, state]).affected == 1 else { return }
                // Asked again (`askAgain`): the rows of its first asking are replaced, and any past the needs now dropped;
                // a refusal keeps those past the needs it asked (the runs it waited for, as one machine keeps them for `show`).
                let dropFrom = failure == nil ? needed.count : Int(Int32.max)
                if needed.isEmpty {
                    if failure == nil { try db.query("DELETE FROM run_needs WHERE run_id = $1", [String(id)]) }
                } else {
                    try db.query("""
                        WITH dropped AS (DELETE FROM run_needs WHERE run_id = $1 AND position >= $5)
                        INSERT INTO run_needs (run_id, position, action, needed_run)
                        SELECT $1, u.position, u.action, u.needed FROM unnest($2::int[], $3::text[], $4::bigint[]) AS u (position, action, needed)
                        ON CONFLICT (run_id, position) DO UPDATE SET action = excluded.action, needed_run = excluded.needed_run,
                          phase = NULL, reason = NULL
                        """, [String(id), "{" + needed.indices.map(String.init).joined(separator: ",") + "}",
                              FleetJournal.textArray(needed.map(\.action)), "{" + needed.map { String($0.run) }.joined(separator: ",") + "}",
                              String(dropFrom)])
                }
                if let failure { try end(id, failure, on: db, as: host, action) }
                try db.execute("NOTIFY baton")
            }
        }
    }

    /// `runs` (asking) each with the needs it was asked before, as the rows say now (`needs`),
    /// when its wait was set back to asking (`askAgain`): its owner asks only those a shutdown stopped.
    static func kept(_ runs: [RunSnapshot], on db: PGConnection) throws -> [RunSnapshot] {
        guard !runs.isEmpty else { return runs }
        let rows = try db.query("""
            SELECT n.run_id, n.action, n.needed_run, r.phase, r.reason FROM run_needs n LEFT JOIN runs r ON r.id = n.needed_run
            WHERE n.run_id = ANY ($1::bigint[]) ORDER BY n.run_id, n.position
            """, ["{" + runs.map { String($0.id) }.joined(separator: ",") + "}"]).rows
        guard !rows.isEmpty else { return runs }
        let needs = Dictionary(waits(rows).map { ($0.run, $0.needs) }, uniquingKeysWith: { first, _ in first })
        return runs.map { run in
            var run = run
            run.needs = needs[run.id]
            return run
        }
    }

    /// The runs run `id` needs, in order, and the runs that need it, each with its phase now (`show`).
    static func both(_ id: Int64, on db: PGConnection) throws -> (needs: [NeededRun], neededBy: [NeededRun]) {
        let needs = try db.query("""
            SELECT n.action, n.needed_run, r.phase, r.reason FROM run_needs n LEFT JOIN runs r ON r.id = n.needed_run
            WHERE n.run_id = $1 ORDER BY n.position
            """, [String(id)]).rows.map { needed($0[...]) }
        let neededBy = try db.query("""
            SELECT r.action, r.id, r.phase, r.reason FROM run_needs n JOIN runs r ON r.id = n.run_id WHERE n.needed_run = $1 ORDER BY r.id
            """, [String(id)]).rows.map { needed($0[...]) }
        return (needs, neededBy)
    }

    /// Whether any queued run's needs are open (asked or waited for), by the partial index of schema 21.
    static let anyOpen = "SELECT EXISTS (SELECT 1 FROM runs WHERE needs IN ('asking', 'waiting') AND phase = 'queued')"

    /// What each waiting run waits for, as the rows say now, on any host (its own actions with
    /// needs or not: `status` of another host's run; the partial index of schema 21 finds none cheaply).
    static func waiting(on db: PGConnection, _ coordinator: FleetCoordinator) throws -> [Int64: [NeededRun]] {
        Dictionary(waits(try db.query(waitingRows).rows).map { ($0.run, $0.needs) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether this host's actions have needs.
    static func configured(_ coordinator: FleetCoordinator) -> Bool {
        coordinator.conductor.configuredActions().contains { !$0.needs.isEmpty }
    }

    /// Once a second, on a host whose actions have no needs: the runs left asking or waiting
    /// (their needs removed by a reload, or their action) are asked again or decided (`tick`).
    static func sweep(_ db: PGConnection, _ coordinator: FleetCoordinator) throws {
        guard !configured(coordinator), try db.query(anyOpen).first?[0] == "t" else { return }
        try tick(db, coordinator, always: true)
    }

    /// A tick of the feed, where this host's actions have needs: asks the needs of this host's
    /// new runs (those not asked already), then decides every wait the rows decide now. A host
    /// whose actions have no needs (any more: a reload removed them, or the action) looks
    /// only once a second (`sweep`, from the feed's refresh), so that no run stays `asking` or
    /// `waiting` for ever: each is asked the needs of its own definition (a reload changes none),
    /// and one this host has no definition for is `met`, its start cancelling or ending it.
    static func tick(_ db: PGConnection, _ coordinator: FleetCoordinator, always: Bool = false) throws {
        guard always || configured(coordinator) else { return }
        let readAt = ContinuousClock.now
        let rows = try db.query(unasked(incarnation: coordinator.host.incarnation)).rows
        // Each asks the needs of the definition it was triggered with, not the config's now (a reload
        // meanwhile); one whose look-up fails now is asked at a later tick, the others and the waits go on.
        var asking: [(RunSnapshot, Action?)] = []
        for (run, row) in zip(try kept(rows.map { FleetRows.run(Array($0.dropLast(2))) }, on: db), rows) {
            do { asking.append((run, try coordinator.definition(of: run.action, DefinitionRef(row.suffix(2)), on: db))) } catch {
                coordinator.log("the needs of run \(run.id) are asked later: its definition could not be read: \(error)")
            }
        }
        coordinator.askNeeds(of: asking, readAt: readAt)
        let definition = { (name: String, ref: DefinitionRef) in try coordinator.definition(of: name, ref, on: db) }
        for (run, outcome) in decided(waits(try db.query(decidableRows).rows)) {
            // One wait that cannot be decided now (it is read again) holds up neither the others nor the tick.
            do { try decide(run, outcome, on: db, as: coordinator.host, definition: definition) } catch {
                coordinator.log("the wait of run \(run) for its needs could not be decided: \(error)")
            }
        }
    }
}
