import BatonCore

/// The fleet's one stop of a run for another: a trigger batch's replace, a hook's replace, a
/// cancel. The engine decides (`RunStop`, `StopDecision`) on the run's row, read while its key's
/// row is held; this is where the decision becomes SQL: a queued run's guarded end and its
/// transition, or the mark its owner stops it by (the owner hears of it from its feed, `StopRequest`).
typealias FleetStop = RunStop

extension RunStop {
    /// Its statements: a queued run's end (first, the guarded update that must change one row)
    /// and its transition; or the mark for its owner.
    func statements() throws -> [FleetJournal.Statement] {
        switch decision {
        case let .ends(end): [FleetJournal.update(end, as: nil), try FleetJournal.insertTransition(end)]
        case .owner: [StopRequest.mark(run, stop)]
        case .none: []
        }
    }

    /// What the check of the guarded update says when it changed nothing.
    var refusal: String { "run \(run) could not be stopped (\(stop.recordText))" }
}

extension RunStop {
    /// Stops `ids` for `stop` now, in a transaction that holds their key's row, `slot` being that
    /// row's slot: the path outside a trigger batch (a cancel, a hook's replace). Reads the runs'
    /// facts, decides each, writes each; the caller writes `slot` back when a queued run left it.
    static func perform(_ ids: [Int64], _ stop: RunMachine.Stop, slot: inout KeySlot, on db: PGConnection, me: String) throws -> [FleetStop] {
        guard !ids.isEmpty else { return [] }
        let facts = try self.facts(of: ids, on: db)
        let stops = decide(ids, stop, facts, slot: &slot, me: me, at: .now)
        try write(stops, on: db)
        return stops
    }

    /// Writes stops the engine decided (`RunStop.decide`, `KeyDecision.step`,
    /// `ApprovalState.end`), each a queued run's guarded end that must change one row, or a mark.
    static func write(_ stops: [FleetStop], on db: PGConnection) throws {
        for stop in stops {
            for (index, statement) in try stop.statements().enumerated() {
                let result = try db.query(statement)
                if index == 0, stop.end != nil, result.affected != 1 { throw PGError(message: stop.refusal) }
            }
        }
    }

    /// The facts of runs a stop reads (`TriggerBatch.factColumns`).
    static func facts(of ids: [Int64], on db: PGConnection) throws -> [Int64: TriggerBatch.RunFacts] {
        let list = "{" + ids.map(String.init).joined(separator: ",") + "}"
        var rows = TriggerBatch.Rows(now: .now)
        for row in try db.query("SELECT \(TriggerBatch.factColumns) FROM runs r WHERE r.id = ANY ($1::bigint[])", [list]).rows {
            try TriggerBatch.fact(row, into: &rows)
        }
        return rows.runs
    }

    /// The slot of the key of run `id`, and the key, read from its row (held by the caller).
    static func slot(ofRun id: Int64, on db: PGConnection) throws -> (key: String, slot: KeySlot)? {
        guard let row = try db.query("""
            SELECT k.key, k.holder, k.follow_up, k.draining, k.line FROM keys k JOIN runs r ON r.key = k.key WHERE r.id = $1
            """, [String(id)]).first, let key = row[0] else { return nil }
        return (key, KeySlot(row: Array(row[1...])))
    }
}
