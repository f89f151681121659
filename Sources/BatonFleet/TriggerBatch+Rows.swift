import BatonCore

/// The statements a batch's transaction opens with, in the round trip of its BEGIN, and the
/// `Rows` read from their results. Lock order (the fleet's one global order): the batch's key
/// rows in one statement, in key order, then the lock rows its new runs may claim in one
/// statement, in name order, then the rate-limited buckets' advisory locks in bucket order
/// (`FleetRates`); everything else is read after, under those locks.
extension TriggerBatch {
    /// The opening statements and where each read's rows are in the pipeline's results.
    struct Opening {
        var statements: [FleetJournal.Statement] = [("BEGIN", []), FleetJournal.genericPlans]
        var slots = 0, runs = 0, clock = 0, pauses = 0
        /// Each rate-limited bucket's read (`FleetRates`).
        var rates: [String: Int] = [:]
        var lastSuccess: Int?, deliveries: Int?, slotRuns: Int?

        mutating func add(_ statement: FleetJournal.Statement) -> Int {
            statements.append(statement)
            return statements.count - 1
        }
    }

    /// The columns read of a run a trigger may share or stop (`RunFacts`), then its window.
    static let factColumns = """
        r.id, r.phase, r.last_seq, r.incarnation, r.definition, r.host, r.debounce_first, r.debounce_until, r.debounce_window, r.debounce_max_wait,
        r.params
        """

    /// What the batch sends first: its statements' generic plans (`FleetJournal.genericPlans`),
    /// its keys' rows made if new and locked in key order, the lock
    /// rows of the actions that claim locks (`FleetLocks.lockRows`), then what its triggers are
    /// decided from: the keys' holders and follow-ups, the database's clock, the actions' pauses, and, where a
    /// trigger needs them, the keys' last successes, the deliveries' runs and the slots' runs.
    /// A trigger of an action with needs adds the needed actions' keys (recursively: the facts
    /// `KeyDecision.needRefusal` reads) to its own, with their pauses, rate buckets and last successes.
    static func opening(_ entries: [Entry]) -> Opening {
        let triggers = entries.map(\.trigger)
        // With the keys of the awaiting hooks its new runs may fire (`FleetHooks.awaitingKeys`).
        let hookKeys = triggers.flatMap { FleetHooks.awaitingKeys(of: $0.action, hookRun: false) }
        // What the triggers' needs are decided on; none for an action without needs.
        let needed = triggers.flatMap { KeyDecision.needed(by: $0.action, params: $0.params) }
        let asked = triggers.map { (action: $0.action, key: $0.key) } + needed
        let keys = FleetJournal.textArray(Array(Set(triggers.map(\.key) + hookKeys + needed.map(\.key))).sorted())
        var opening = Opening()
        _ = opening.add(("INSERT INTO keys (key) SELECT k FROM unnest($1::text[]) AS k ORDER BY k ON CONFLICT DO NOTHING", [keys]))
        opening.slots = opening.add(("SELECT key, holder, follow_up, draining, line FROM keys WHERE key = ANY ($1::text[]) ORDER BY key FOR UPDATE", [keys]))
        let locks = triggers.flatMap { $0.action.locks.map(\.name) }
        if !locks.isEmpty { for statement in FleetLocks.lockRows(locks) { _ = opening.add(statement) } }
        // The rate-limited buckets after the lock rows, each locked then read (`FleetRates`).
        var claims: [String: (claim: RateClaim, action: String, key: String)] = [:]
        for (action, key) in asked {
            if let claim = action.rateClaim(key: key) { claims[claim.bucket] = (claim, action.name, key) }
        }
        let rates = FleetRates.opening(claims)
        let reads = rates.statements.map { opening.add($0) }.suffix(rates.buckets.count)
        for (bucket, at) in zip(rates.buckets, reads) { opening.rates[bucket] = at }
        // The holders, then the lines' runs, each by the runs' primary key (`FleetKeyRuns`: a
        // plain join, planned while `runs` was small, read every run for each batch).
        opening.runs = opening.add((FleetKeyRuns.heldAndLined(factColumns, where: "k.key = ANY ($1::text[])"), [keys]))
        opening.clock = opening.add(("SELECT \(FleetCooldown.databaseNow)", []))
        opening.pauses = opening.add(FleetPauses.of(Array(Set(asked.map(\.action.name))).sorted()))
        let cooling = Set(asked.filter { $0.action.cooldown != nil }.map(\.key)).sorted()
        if !cooling.isEmpty {
            opening.lastSuccess = opening.add(("""
                SELECT k.key, r.id, k.last_success_at FROM keys k \(FleetKeyRuns.run("k.last_success_run")) WHERE k.key = ANY ($1::text[])
                """, [FleetJournal.textArray(cooling)]))
        }
        let deliveries = triggers.compactMap(\.delivery)
        if !deliveries.isEmpty {
            opening.deliveries = opening.add(("""
                SELECT d.hook, d.delivery, d.run_id FROM webhook_deliveries d
                JOIN unnest($1::text[], $2::text[]) AS w(hook, delivery) ON d.hook = w.hook AND d.delivery = w.delivery
                """, [FleetJournal.textArray(deliveries.map(\.hook)), FleetJournal.textArray(deliveries.map(\.id))]))
        }
        let slots = triggers.compactMap { trigger in trigger.slot.map { (trigger.action.name, $0) } }
        if !slots.isEmpty {
            opening.slotRuns = opening.add(("""
                SELECT r.action, r.slot, \(factColumns) FROM runs r
                JOIN unnest($1::text[], $2::bigint[]) AS s(action, slot) ON r.action = s.action AND r.slot = s.slot
                """, [FleetJournal.textArray(slots.map(\.0)), "{" + slots.map { String($0.1.rawValue) }.joined(separator: ",") + "}"]))
        }
        return opening
    }

    /// The rows the opening read (`results` are the pipeline's, BEGIN's included); nil when the clock is missing.
    static func rows(_ results: [PGRows], _ opening: Opening) throws -> Rows? {
        guard let now = results[opening.clock].first?[0].flatMap({ Int64($0) }) else { return nil }
        var rows = Rows(now: Timestamp(rawValue: now), stamp: .now)
        for row in results[opening.slots].rows {
            if let key = row[0] { rows.slots[key] = KeySlot(row: Array(row[1...])) }
        }
        for row in results[opening.runs].rows { try fact(row, into: &rows) }
        for case let pause? in results[opening.pauses].rows.map({ FleetPauses.pause($0) }) { rows.pauses[pause.action] = pause }
        for (bucket, index) in opening.rates { rows.rates[bucket] = FleetRates.bucket(results[index].rows) }
        if let index = opening.lastSuccess {
            for row in results[index].rows {
                guard let key = row[0], let run = row[1].flatMap({ Int64($0) }), let at = row[2].flatMap({ Int64($0) }) else { continue }
                rows.lastSuccess[key] = LastSuccess(run: run, at: Timestamp(rawValue: at))
            }
        }
        if let index = opening.deliveries {
            for row in results[index].rows {
                guard let hook = row[0], let id = row[1], let run = row[2].flatMap({ Int64($0) }) else { continue }
                rows.deliveries[DeliveryID(hook: hook, id: id)] = run
            }
        }
        if let index = opening.slotRuns {
            for row in results[index].rows {
                guard let action = row[0], let at = row[1].flatMap({ Int64($0) }), let run = row[2].flatMap({ Int64($0) }) else { continue }
                rows.slotRuns[SlotBook.Slot(action: action, at: Timestamp(rawValue: at))] = run
                try fact(Array(row[2...]), into: &rows)
            }
        }
        return rows
    }

    /// One row of `factColumns`: the run's facts, and its window while it is queued with one.
    /// Throws where the last seq (`NOT NULL`) does not read: a stop writes the next one.
    static func fact(_ row: [String?], into rows: inout Rows) throws {
        guard row.count >= 11, let id = row[0].flatMap({ Int64($0) }) else { return }
        guard let lastSeq = row[2].flatMap({ Int($0) }) else { throw PGError(message: "run \(id)'s last_seq could not be read") }
        let phase = Phase(rawValue: row[1] ?? "") ?? .failure
        rows.runs[id] = RunFacts(phase: phase, lastSeq: lastSeq, owner: row[3], definition: row[4], host: row[5],
                                 params: JSONText.params(row[10]))
        guard phase == .queued, let first = row[6].flatMap({ Int64($0) }), let until = row[7].flatMap({ Int64($0) }),
              let window = row[8].flatMap({ Int64($0) }), let maxWait = row[9].flatMap({ Int64($0) }) else { return }
        rows.windows[id] = DebounceWindow(window: .microseconds(window), maxWait: .microseconds(maxWait), first: Timestamp(rawValue: first),
                                          deadline: Timestamp(rawValue: until))
    }
}
