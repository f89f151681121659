import BatonCore
import FoundationEssentials

/// What the other hosts did, as this host learns it: a connection of its own (a `SerialWorker`
/// with its `LISTEN baton` connection) runs a tick on every notification, and once a second
/// anyway (notifications are lossy, and a new connection misses those sent while it was away):
/// (notifications of output alone wake the followers of those runs' output, `FeedWake`);
/// it reads the transitions committed since the snapshot it last read up to (`FeedPosition`:
/// writers hold no common lock, so ids do not commit in order), tells watchers and followers, stops the runs of this host that others asked
/// to stop, starts the runs of this host whose keys came free, and refreshes the fleet's runs in
/// flight for `status`.
///
/// The reactor watches the connection's socket between ticks and holds the one-second timer;
/// no thread waits for either. A tick takes the socket out of the reactor while it uses the
/// connection, and puts it back at its end.
final class FleetFeed: Sendable {
    /// What the feed's thread owns.
    struct Connection {
        var link: PGLink
        /// Where the feed is; nil until first read.
        var position: FeedPosition?
        var refreshed = ContinuousClock.now - .seconds(1)
        /// When the last tick ran (notifications of output alone wake followers, not a tick).
        var ticked = ContinuousClock.now - .seconds(1)
        /// When the stops asked of this host's runs were last read.
        var stopsRead = ContinuousClock.now - .seconds(1)
    }

    /// A tick; `done` is told the socket to watch once it has run.
    private struct Tick: Sendable {
        var done: @Sendable (Int32) -> Void
    }

    /// The socket the reactor watches (with a token per watch), the backstop timer, and whether
    /// the feed stopped. The reactor's `watch` and `remove` of the socket are called under this
    /// lock, so that a watch is never removed once its socket is closed (its number may be an
    /// attempt's pipe by then).
    private struct Watching {
        var socket: (fd: Int32, token: UInt64)?
        var nextToken: UInt64 = 1
        var timer: Reactor.TimerID?
        var stopped = false
    }

    /// The most ticks one wake runs while notifications keep coming with their answers.
    static let rounds = 50
    private let coordinator: FleetCoordinator
    private let worker: SerialWorker<Tick>
    private let watching: Locked<Watching>

    /// A feed that starts after the transitions `start` sees (nil: after those committed when it first connects).
    init(_ coordinator: FleetCoordinator, after start: FeedSnapshot?) {
        self.coordinator = coordinator
        let watching = Locked(Watching())
        self.watching = watching
        let link = PGLink(conninfo: coordinator.pool.conninfo, defaults: coordinator.pool.defaults)
        // One tick waiting at most: a notification during a tick asks for one more, not for many.
        worker = SerialWorker(name: "baton-fleet-feed", capacity: 1, idleTimeout: .seconds(10),
                              state: Connection(link: link, position: start.map(FeedPosition.init(seen:)))) { [coordinator] state, batch in
            Self.run(&state, &batch, coordinator, watching)
        }
    }

    func start() { tick() }

    func stop() {
        let timer = watching.withLock { watching -> Reactor.TimerID? in
            watching.stopped = true
            Self.unwatch(&watching, coordinator.reactor)
            return watching.timer
        }
        if let timer { coordinator.reactor.cancel(timer) }
        worker.close(timeout: .seconds(5))
    }

    /// Asks for a tick (none more if one is waiting already).
    private func tick() {
        try? worker.submit(Tick { [self] fd in watch(fd) })
    }

    private static func run(_ state: inout Connection, _ batch: inout SerialWorker<Tick>.Batch, _ coordinator: FleetCoordinator,
                            _ watching: Locked<Watching>) {
        watching.withLock { unwatch(&$0, coordinator.reactor) }
        do {
            let (db, notes) = try listening(&state)
            try handle(FeedWake(notes, lastTickAge: .now - state.ticked), db, &state, coordinator)
            // Notifications that came with a tick's answers wait in libpq, not in the socket (the
            // reactor would not see them): each may be of a commit after the catch-up, so tick
            // again until none came (at most `Self.rounds` times; past that the backstop comes).
            for _ in 0..<Self.rounds {
                let later = try db.notifications()
                if later.isEmpty { break }
                try handle(FeedWake(later, lastTickAge: .now - state.ticked), db, &state, coordinator)
            }
            for job in batch.jobs { job.done(db.socket) }
        } catch {
            state.link.drop()
            coordinator.log("the fleet's feed lost PostgreSQL (\(error)); trying again")
            batch.retry(batch.jobs, after: .milliseconds(500))
        }
    }

    private static func handle(_ wake: FeedWake, _ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws {
        if wake.tick {
            state.ticked = .now
            try tick(db, &state, coordinator, stops: wake.stops)
        }
        coordinator.remoteOutput.wake(wake.outputRuns)
    }

    /// The listening connection, connected and LISTENing anew after a failure, and its pending
    /// notifications (nil on a new connection: the tick reads what any it missed announced).
    private static func listening(_ state: inout Connection) throws -> (PGConnection, [(channel: String, payload: String)]?) {
        if let db = state.link.connection, db.isOK {
            return (db, try db.notifications())
        }
        let db = try state.link.open()
        try db.execute("LISTEN baton; LISTEN \(FeedWake.outputChannel)")
        return (db, nil)
    }

    /// Between ticks: the reactor watches the socket (its input asks for a tick) and holds the
    /// one-second backstop.
    private func watch(_ fd: Int32) {
        let old = watching.withLock { state -> Reactor.TimerID?? in
            guard !state.stopped else { return nil }
            let token = state.nextToken
            state.nextToken += 1
            state.socket = (fd, token)
            coordinator.reactor.watch(fd) { [self] _ in
                let asked = watching.withLock { state -> Bool in
                    guard state.socket?.token == token else { return false }
                    Self.unwatch(&state, coordinator.reactor)
                    return true
                }
                if asked { tick() }
            }
            defer { state.timer = nil }
            return .some(state.timer)
        }
        guard let old else { return }
        if let old { coordinator.reactor.cancel(old) }
        let timer = coordinator.reactor.after(.seconds(1)) { [self] in tick() }
        let raced = watching.withLock { watching in
            defer { watching.timer = timer }
            return watching.timer
        }
        if let raced { coordinator.reactor.cancel(raced) }
    }

    /// Takes the socket out of the reactor (under `watching`'s lock).
    private static func unwatch(_ watching: inout Watching, _ reactor: Reactor) {
        guard let socket = watching.socket else { return }
        reactor.remove(socket.fd)
        watching.socket = nil
    }
}

extension FleetCoordinator {
    /// Starts following the fleet after the transitions committed now (read before this returns,
    /// so that nothing committed afterwards is missed, however late the listening connection
    /// comes up); stop the returned feed at exit.
    public func startFeed() async -> FleetFeedHandle {
        let start = try? await pool.run { db in try FleetFeed.snapshot(on: db) }
        let feed = FleetFeed(self, after: start)
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
