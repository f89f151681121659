import BatonCore
import FoundationEssentials

extension FleetFeed {
    /// One pass: catch up, stop what was asked (when a stop was announced, and once a second:
    /// notifications are lossy), ask the loop for a look at what may start (`lookForStarts`); once
    /// a second, end the waits for approval that timed out and refresh what is in flight.
    static func tick(_ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator, stops announced: Bool) throws {
        if state.position == nil { state.position = FeedPosition(seen: try snapshot(on: db)) }
        let began = coordinator.reactor.clock.now
        while try catchUp(db, &state, coordinator) {}
        caughtUp(began, &state, coordinator)
        if announced || ContinuousClock.now - state.stopsRead >= .seconds(1) { try readStops(db, &state, coordinator) }
        // The needs: when the catch-up brought a run made or ended, and once a second (an
        // approval decided, a wait written after its needed runs ended, bring no transition).
        if state.needsDue || ContinuousClock.now - state.needsLooked >= .seconds(1) {
            (state.needsDue, state.needsLooked) = (false, .now)
            do { try FleetNeeds.tick(db, coordinator) } catch {
                state.needsDue = true
                throw error
            }
        }
        coordinator.lookForStarts()
        // What `status` shows of other hosts follows the feed; read once a second as a backstop
        // (the loop is handed what changed, and every run now and then: `HandedRuns`).
        guard ContinuousClock.now - state.refreshed >= .seconds(1) else { return }
        state.refreshed = .now
        // Waits for approval whose end came, by the database's clock: decided once, by whichever
        // host's tick is first; and waits of actions whose `approve` a reload removed, waived.
        // Always: a host whose config has none any more still ends or waives what waits.
        try coordinator.timeOutApprovals(on: db)
        try coordinator.keepLoaded(on: db)
        try coordinator.waiveApprovals(on: db)
        try refresh(db, &state.handed, coordinator)
    }

    /// Tells the loop that a catch-up begun at `began` succeeded (after its deliveries), at most
    /// four times a second: the table is followed without reads only while it is recent
    /// (`CoordinatorState.fed`), and a stamp older than the truth only makes that rarer.
    static func caughtUp(_ began: ContinuousClock.Instant, _ state: inout Connection, _ coordinator: FleetCoordinator) {
        if let told = state.caughtUpTold, began - told < .milliseconds(250) { return }
        state.caughtUpTold = began
        coordinator.reactor.onLoop { coordinator.send(.caughtUp(at: began)) }
    }

    /// Stops the runs of this host that another asked to stop (`StopRequest`).
    private static func readStops(_ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws {
        state.stopsRead = .now
        let stops = try db.query("""
            SELECT id, stop FROM runs WHERE incarnation = $1 AND stop IS NOT NULL AND phase IN ('loading', 'retrying')
            """, [coordinator.host.incarnation]).rows
        for row in stops {
            if let id = row[0].flatMap({ Int64($0) }), let text = row[1] { coordinator.conductor.stop(run: id, RunMachine.Stop(recordText: text)) }
        }
    }

    enum LivePart: Hashable, Sendable { case seq, line }
    /// A run in flight with its last seq and its place in its key's line.
    static let liveColumns = FleetSelect<LivePart>(run: nil, [
        (.seq, ["last_seq"]), (.line, ["(SELECT array_position(k.line, runs.id) FROM keys k WHERE k.key = runs.key)"]),
    ])

    /// The fleet's runs in flight, for `status`, what each run in a lock's line waits for, each
    /// follow-up's place in its key's line (`keys.line`), and the actions paused; the loop is
    /// handed only the runs that changed (`HandedRuns`).
    private static func refresh(_ db: PGConnection, _ handed: inout HandedRuns, _ coordinator: FleetCoordinator) throws {
        // What each run in a lock's line waits for, on whichever host (`FleetLocks.waits`).
        let limits = coordinator.lockLimits()
        let waits = limits.isEmpty ? [:] : FleetLocks.waits(FleetLocks.rows(try db.query(FleetLocks.live(overlapping: nil)).rows), limits: limits)
        // Each run's wait for approval, and how it was decided (`status`: "waiting for approval by ...").
        let approvals = try FleetApprovals.ofLiveRuns(on: db)
        // What each waiting run waits for (`FleetNeeds`), on whichever host: `waiting for build-a run 41`.
        try FleetNeeds.sweep(db, coordinator)
        let needs = try FleetNeeds.waiting(on: db, coordinator)
        let rows = try db.query("""
            SELECT \(liveColumns.sql) FROM runs WHERE phase IN ('queued', 'loading', 'retrying')
            """).rows
        // A run read as it was last handed keeps its decorations only if they are the same too.
        let event = handed.refresh(rows, run: { row in
            FleetRows.run(row) { run in
                run.seq = Int(liveColumns.value(row, .seq) ?? "")
                if run.phase == .queued {
                    run.waiting = waits[run.id]
                    run.line = liveColumns.value(row, .line).flatMap { Int($0) }
                    run.needs = needs[run.id]
                }
                run.approval = approvals[run.id]
            }
        }, same: { run in
            run.approval == approvals[run.id] && (run.phase != .queued || (run.waiting == waits[run.id] && run.needs == needs[run.id]))
        })
        coordinator.reactor.onLoop { coordinator.send(event) }
        // Pauses made or ended on any host: this host's status, metrics and dashboard follow.
        let readAt = Timestamp.now
        coordinator.conductor.seen(pauses: try FleetPauses.read(on: db), readAt: readAt)
    }

    /// The snapshot the feed starts from: what it sees committed is not delivered, the rest will be.
    static func snapshot(on db: PGConnection) throws -> FeedSnapshot {
        let text = try db.query("SELECT pg_current_snapshot()::text").first?[0] ?? ""
        guard let snapshot = FeedSnapshot(text) else { throw PGError(message: "PostgreSQL gave a snapshot Baton cannot read: \(text)") }
        return snapshot
    }

    /// One page of a catch-up (`FeedPosition`, parameters `FeedPosition.parameters`): the target
    /// snapshot in the first column of every row (the statement's own when $3 is NULL: one
    /// statement, one snapshot), then each transition the target sees and `seen` did not (nor
    /// delivered ahead, $5: `FeedAhead`), with
    /// its run's row, in id order; one row of NULLs after the target when there is none. The
    /// transactions `seen` did not see are found by `transitions_by_xid` first (a range below the
    /// target's xmax, and those in progress then), materialized, and only then ordered by id: a
    /// plan that walks the primary key in id order reads every transition on every tick. It is
    /// planned for its values each time (`planEachTime`): PostgreSQL's generic plan of it, made
    /// without them, scans the whole table.
    static let catchUpQuery = """
        WITH s AS (SELECT coalesce($3::pg_snapshot, pg_current_snapshot()) AS target),
        delta AS MATERIALIZED (
            SELECT t.id, t.run_id, t.seq, t.from_phase, t.to_phase, t.at, t.detail, t.xid FROM transitions t
            WHERE ((t.xid >= $1::xid8 AND t.xid < pg_snapshot_xmax(coalesce($3::pg_snapshot, pg_current_snapshot())))
                   OR t.xid = ANY ($2::xid8[]))
              AND NOT (t.xid = ANY ($5::xid8[]))
        )
        SELECT s.target::text, x.* FROM s LEFT JOIN LATERAL (
            SELECT \(CatchUpColumns.select.sql)
            FROM delta t JOIN runs r ON r.id = t.run_id
            WHERE pg_visible_in_snapshot(t.xid, s.target) AND t.id > $4::bigint
            ORDER BY t.id LIMIT \(FeedPosition.page)
        ) x ON true
        ORDER BY x.transition_id
        """

    /// Reads and hands on one page of transitions the last snapshot did not see; returns whether
    /// the page was full (another follows).
    private static func catchUp(_ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws -> Bool {
        guard var position = state.position else { return false }
        let rows = try page(db, &position, excluding: state.ahead.excluded)
        state.position = position
        if !position.midway { state.ahead.caughtUp(to: position.seen) }
        coordinator.company.publish(state.ahead.mark(state.position))
        coordinator.feedCounts.read(rows.count)
        // A run made or queued again (its needs to ask), or ended (a wait it may decide).
        if rows.contains(where: { $0.transition.to == .queued || $0.transition.to.isTerminal }) {
            state.needsDue = true
        }
        for row in rows { state.handed.delivering(row.run.id) }
        deliver(rows, coordinator)
        return position.midway
    }

    /// Reads one page of a catch-up and moves `position` past it: the rows of `catchUpQuery`
    /// after its target column, decoded (`CatchUpColumns`). Unchanged when the statement fails
    /// (nothing was delivered).
    static func page(_ db: PGConnection, _ position: inout FeedPosition, excluding: [UInt64] = []) throws -> [CatchUpColumns.Row] {
        let result = try db.query(catchUpQuery, position.parameters(excluding: excluding), planEachTime: true).rows
        guard let text = result.first?[0] ?? nil, let target = FeedSnapshot(text) else {
            throw PGError(message: "the feed's catch-up gave no snapshot")
        }
        // The LEFT JOIN's row of NULLs (none to read) has no run id.
        let rows = result.filter { $0.count > 1 && $0[1] != nil }.map { CatchUpColumns.decode(Array($0.dropFirst())) }
        position.read(rows.count, target: target, lastID: rows.last?.transitionID)
        return rows
    }

    /// Hands each transition on.
    static func deliver(_ rows: [CatchUpColumns.Row], _ coordinator: FleetCoordinator) {
        for row in rows {
            let (run, transition) = (row.run, row.transition)
            let update = RunUpdate(run: run, transition: transition)
            // On the loop, before any follower's news (which the loop sends on, in order).
            coordinator.reactor.onLoop { [run] in coordinator.send(.delivered(run, ended: transition.to.isTerminal)) }
            if transition.to.isTerminal {
                // Known before any follower hears of the end: `status` right after agrees. Any
                // host's success opens its key's cooldown window, so `status` shows it here too.
                coordinator.conductor.remember([run])
                if run.phase == .success, coordinator.conductor.action(named: run.action)?.cooldown != nil {
                    coordinator.conductor.remember(successes: [run])
                }
            }
            coordinator.reactor.onLoop { coordinator.followers.deliver(update) }
            coordinator.conductor.publishFromFleet(update)
            if transition.to.isTerminal {
                // Its output's followers read its end now, not at their next read.
                coordinator.remoteOutput.wake([run.id])
            }
        }
    }
}
