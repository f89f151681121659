import BatonCore
import FoundationEssentials

extension FleetFeed {
    /// One pass: catch up, stop what was asked, start what may start, refresh what is in flight.
    static func tick(_ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws {
        if state.lastID == nil {
            state.lastID = Int64(try db.query("SELECT coalesce(max(id), 0) FROM transitions").first?[0] ?? "") ?? 0
        }
        while try catchUp(db, &state, coordinator) == 500 {}
        let stops = try db.query("""
            SELECT id, stop FROM runs WHERE incarnation = $1 AND stop IS NOT NULL AND phase IN ('loading', 'retrying')
            """, [coordinator.host.incarnation]).rows
        for row in stops {
            if let id = row[0].flatMap({ Int64($0) }), let text = row[1] { coordinator.conductor.stop(run: id, StopRequest.parse(text)) }
        }
        try coordinator.startWaiting(on: db)
        // What `status` shows of other hosts follows the feed; read whole once a second as a backstop.
        guard ContinuousClock.now - state.refreshed >= .seconds(1) else { return }
        state.refreshed = .now
        let live = try db.query("SELECT \(FleetRows.runColumns), last_seq FROM runs WHERE phase IN ('queued', 'loading', 'retrying')").rows.map { row in
            var run = FleetRows.run(row)
            run.seq = Int(row[FleetRows.runColumnCount] ?? "")
            return run
        }
        coordinator.fleetInFlight.withLock { $0 = Dictionary(live.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last }) }
    }

    /// Transitions after an id, each with its run's row (columns prefixed once, not per tick).
    static let catchUpQuery = """
        SELECT t.id, t.seq, t.from_phase, t.to_phase, t.at, t.detail, r.last_seq, \(FleetRows.runColumns.split(separator: ",")
            .map { "r." + $0.trimmingWhitespace() }.joined(separator: ", "))
        FROM transitions t JOIN runs r ON r.id = t.run_id WHERE t.id > $1 ORDER BY t.id LIMIT 500
        """

    /// Reads and hands on up to 500 transitions after the last seen; returns how many.
    private static func catchUp(_ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws -> Int {
        let rows = try db.query(catchUpQuery, [String(state.lastID ?? 0)]).rows
        for row in rows {
            state.lastID = Int64(row[0] ?? "") ?? state.lastID
            var run = FleetRows.run(Array(row[7...]))
            let transition = FleetRows.transition(runID: run.id, row, from: 1)
            run.seq = transition.seq
            if Int(row[6] ?? "") != transition.seq {
                // A later transition is committed too: show the run as it was at this one.
                run.phase = transition.to
                if !transition.to.isTerminal { (run.endedAt, run.reason) = (nil, nil) }
                run.error = transition.detail.error
            }
            let update = RunUpdate(run: run, transition: transition)
            coordinator.fleetInFlight.withLock { live in
                if transition.to.isTerminal { live[run.id] = nil } else { live[run.id] = run }
            }
            coordinator.followers.deliver(update)
            coordinator.conductor.publishFromFleet(update)
            if transition.to.isTerminal {
                // Its output's followers read its end now, not at their next read.
                coordinator.remoteOutput.wake([run.id])
                coordinator.adopted.withLock { $0[run.id] = nil }
                coordinator.conductor.remember([run])
            }
        }
        return rows.count
    }
}
