import BatonCore
import Foundation

/// What the other hosts did, as this host learns it: a dedicated connection LISTENs on
/// `baton`; on every notification, and once a second anyway (notifications are lossy, and a
/// new connection misses those sent while it was away), it reads the transitions committed
/// since the last it saw (their ids commit in order: writers hold one lock), tells watchers
/// and followers, stops the runs of this host that others asked to stop, starts the runs of
/// this host whose keys came free, and refreshes the fleet's runs in flight for `status`.
final class FleetFeed: @unchecked Sendable {
    private let coordinator: FleetCoordinator
    private var connection: PGConnection?
    private var lastID: Int64 = 0
    private var refreshed = ContinuousClock.now - .seconds(1)
    private let stopped = Locked(false)
    /// A pipe that wakes the loop to stop it.
    private var wake: [Int32] = [-1, -1]

    /// Starts after the transitions committed so far (read now, so that nothing committed once
    /// this returns is missed, however late the listening connection comes up).
    init(_ coordinator: FleetCoordinator) {
        self.coordinator = coordinator
        _ = pipe(&wake)
        lastID = (try? coordinator.pool.with { db in
            Int64(try db.query("SELECT coalesce(max(id), 0) FROM transitions").first?[0] ?? "") ?? 0
        }) ?? 0
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "baton-fleet-feed"
        thread.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
        var byte: UInt8 = 1
        _ = write(wake[1], &byte, 1)
    }

    private func run() {
        while !stopped.withLock({ $0 }) {
            do {
                let db = try listening()
                try tick(db)
                var fds = [pollfd(fd: db.socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake[0], events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, 1_000)
                _ = try db.notifications()
            } catch {
                connection = nil
                coordinator.log("the fleet's feed lost PostgreSQL (\(error)); trying again")
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    private func listening() throws -> PGConnection {
        if let connection, connection.isOK { return connection }
        let db = try coordinator.pool.dedicated()
        try db.execute("LISTEN baton")
        connection = db
        return db
    }

    /// One pass: catch up, stop what was asked, start what may start, refresh what is in flight.
    func tick(_ db: PGConnection) throws {
        while try catchUp(db) == 500 {}
        let stops = try db.query("""
            SELECT id, stop FROM runs WHERE incarnation = $1 AND stop IS NOT NULL AND phase IN ('loading', 'retrying')
            """, [coordinator.host.incarnation]).rows
        for row in stops {
            if let id = row[0].flatMap({ Int64($0) }), let text = row[1] { coordinator.conductor.stop(run: id, StopRequest.parse(text)) }
        }
        try coordinator.startWaiting(on: db)
        // What `status` shows of other hosts follows the feed; read whole once a second as a backstop.
        guard ContinuousClock.now - refreshed >= .seconds(1) else { return }
        refreshed = .now
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
            .map { "r." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }.joined(separator: ", "))
        FROM transitions t JOIN runs r ON r.id = t.run_id WHERE t.id > $1 ORDER BY t.id LIMIT 500
        """

    /// Reads and hands on up to 500 transitions after the last seen; returns how many.
    private func catchUp(_ db: PGConnection) throws -> Int {
        let rows = try db.query(Self.catchUpQuery, [String(lastID)]).rows
        for row in rows {
            lastID = Int64(row[0] ?? "") ?? lastID
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
                coordinator.adopted.withLock { $0[run.id] = nil }
                coordinator.conductor.remember([run])
            }
        }
        return rows.count
    }
}

extension FleetCoordinator {
    /// Starts following the fleet; stop the returned feed at exit.
    public func startFeed() -> FleetFeedHandle {
        let feed = FleetFeed(self)
        feed.start()
        return FleetFeedHandle(feed)
    }
}

/// A running feed, to stop at exit.
public struct FleetFeedHandle: Sendable {
    fileprivate let feed: FleetFeed
    fileprivate init(_ feed: FleetFeed) { self.feed = feed }
    public func stop() { feed.stop() }
}
