import BatonCore
import Dispatch
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
/// no thread waits for either. Both are the loop's (`Watching`): a tick is asked for on the loop,
/// and the socket is watched only while no tick is asked for or running (a tick that fails may
/// close its connection, whose number may be an attempt's pipe by then).
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
        /// When the needs were last looked at (`FleetNeeds.tick`), and whether a catch-up since
        /// delivered what may change them (a run made, queued again, or ended).
        var needsLooked = ContinuousClock.now - .seconds(1)
        var needsDue = true
        /// What the refresh last handed the loop, and what was delivered since (`HandedRuns`).
        var handed = HandedRuns()
        /// When the catch-up the loop last heard of began (`CoordinatorState.caughtUp`).
        var caughtUpTold: ContinuousClock.Instant?
        /// This host's commits delivered ahead of the catch-ups (`FeedAhead`).
        var ahead = FeedAhead()
        /// A commit of this host was left to a catch-up: the next tick catches up whatever the
        /// notifications (`FeedWake` asks for none for this host's own).
        var catchUpDue = false
    }

    /// What the feed's thread is asked: a tick (`done` is told the socket to watch once it has
    /// run), or a commit of this host to deliver (`OwnCommit`), in the order they were asked.
    enum Job: Sendable {
        case tick(done: @Sendable (Int32) -> Void)
        case own(OwnCommit)
        /// A commit of this host that could not be handed over: the next tick catches up.
        case catchUp
    }

    /// The loop's: the socket the reactor watches (with a token per watch), the backstop timer,
    /// the ticks asked for and not yet done, and whether the feed stopped.
    private struct Watching {
        var socket: (fd: Int32, token: UInt64)?
        var nextToken: UInt64 = 1
        var timer: Reactor.TimerID?
        var ticks = 0
        var stopped = false
    }

    /// The most ticks one wake runs while notifications keep coming with their answers.
    static let rounds = 50
    /// The most jobs the feed's thread takes at once (own commits, mostly).
    static let batch = 256
    private let coordinator: FleetCoordinator
    private let worker: SerialWorker<Job>
    private let watching: LoopOwned<Watching>
    private var reactor: Reactor { coordinator.reactor }

    /// A feed that starts after the transitions `start` sees (nil: after those committed when it first connects).
    init(_ coordinator: FleetCoordinator, after start: FeedSnapshot?) {
        self.coordinator = coordinator
        watching = LoopOwned(Watching(), on: coordinator.reactor)
        let link = PGLink(conninfo: coordinator.pool.conninfo, defaults: coordinator.pool.defaults)
        // Never refused but once closed: the loop asks one tick waiting at most (`tick`), and a
        // commit handed over is delivered, or caught up by a tick.
        worker = SerialWorker(name: "baton-fleet-feed", capacity: 1, maxBatch: Self.batch, idleTimeout: .seconds(10),
                              state: Connection(link: link, position: start.map(FeedPosition.init(seen:)))) { [coordinator] state, batch in
            Self.run(&state, &batch, coordinator)
        }
    }

    func start() { coordinator.reactor.onLoop { [self] in tick() } }

    /// Asks for a tick, from any thread.
    func poke() { coordinator.reactor.onLoop { [self] in tick() } }

    /// From any thread: the next tick catches up, whatever the notifications it finds.
    func catchUp() {
        do throws(WorkerRefusal) { try worker.submit(.catchUp, bounded: false) } catch {}
    }

    /// Hands a commit of this host to the feed's thread, from the committer's: delivered in the
    /// order handed, after what was asked before (`OwnCommit`).
    func hand(_ commit: OwnCommit) {
        do throws(WorkerRefusal) { try worker.submit(.own(commit), bounded: false) } catch {
            // Closed: batond is stopping, and nobody follows its runs any more.
        }
    }

    /// Takes the socket out of the reactor on the loop (waited for: the connection closes next),
    /// then stops the feed's thread. Blocks: batond calls it on a thread of its own.
    func stop() {
        let unwatched = DispatchSemaphore(value: 0)
        coordinator.reactor.onLoop { [self] in
            let timer = watching.access { watching -> Reactor.TimerID? in
                watching.stopped = true
                Self.unwatch(&watching, reactor)
                defer { watching.timer = nil }
                return watching.timer
            }
            if let timer { reactor.cancel(timer) }
            unwatched.signal()
        }
        // A loop that did not take the socket out in time may still watch it: the connection is
        // left open then (batond is stopping), never closed under the loop's watch, where its
        // descriptor's number could be reused by another file while still registered.
        guard unwatched.wait(timeout: .now() + .seconds(5)) == .success else {
            return coordinator.log("the fleet's feed stopped without its loop; its connection is left to the exit")
        }
        worker.close(timeout: .seconds(5))
    }

    /// On the loop: asks for a tick (none more if one is waiting already: with one running and
    /// one waiting, the waiting one reads what another would), the socket out of the reactor first.
    private func tick() {
        let asked = watching.access { watching -> Bool in
            guard !watching.stopped else { return false }
            Self.unwatch(&watching, reactor)
            guard watching.ticks < 2 else { return false }
            watching.ticks += 1
            return true
        }
        guard asked else { return }
        do throws(WorkerRefusal) {
            try worker.submit(.tick { [self] fd in coordinator.reactor.onLoop { [self] in watch(fd) } }, bounded: false)
        } catch {
            watching.access { $0.ticks -= 1 }
        }
    }

    /// The jobs in order: each own commit delivered or left to a catch-up (`deliverOwn`, which
    /// needs no connection), each run of ticks one tick; the ticks of one that failed are tried
    /// again (the own commits after it go on: nothing waits behind a feed that cannot connect).
    private static func run(_ state: inout Connection, _ batch: inout SerialWorker<Job>.Batch, _ coordinator: FleetCoordinator) {
        let jobs = batch.jobs
        var (index, failed, delivered) = (0, [Job](), false)
        while index < jobs.count {
            if case let .own(commit) = jobs[index] {
                delivered = deliverOwn(commit, &state, coordinator) || delivered
                index += 1
                continue
            }
            if case .catchUp = jobs[index] {
                // The tick it asks for comes after this job: it finds the flag set.
                askCatchUp(&state, coordinator)
                index += 1
                continue
            }
            var end = index
            while end < jobs.count, case .tick = jobs[end] { end += 1 }
            if failed.isEmpty, let socket = ticked(&state, coordinator) {
                for case let .tick(done) in jobs[index..<end] { done(socket) }
            } else {
                failed += jobs[index..<end]
            }
            index = end
        }
        if !failed.isEmpty { batch.retry(failed, after: .milliseconds(500)) }
        // What may start now that these are delivered (a tick looks after its catch-up).
        if delivered { coordinator.lookForStarts() }
    }

    /// One tick; returns the connection's socket, or nil when PostgreSQL was lost (the connection closed).
    private static func ticked(_ state: inout Connection, _ coordinator: FleetCoordinator) -> Int32? {
        do {
            let (db, notes) = try listening(&state, coordinator.host)
            let (hello, own) = (FeedWake.hello(coordinator.host.incarnation), coordinator.host.incarnation)
            try handle(FeedWake(notes, lastTickAge: .now - state.ticked, ownHello: hello, own: own, catchUpDue: state.catchUpDue),
                       db, &state, coordinator)
            // Notifications that came with a tick's answers wait in libpq, not in the socket (the
            // reactor would not see them): each may be of a commit after the catch-up, so tick
            // again until none came (at most `Self.rounds` times; past that the backstop comes).
            for _ in 0..<Self.rounds {
                let later = try db.notifications()
                if later.isEmpty { break }
                try handle(FeedWake(later, lastTickAge: .now - state.ticked, ownHello: hello, own: own, catchUpDue: state.catchUpDue),
                           db, &state, coordinator)
            }
            return db.socket
        } catch {
            state.link.drop()
            coordinator.log("the fleet's feed lost PostgreSQL (\(error)); trying again")
            return nil
        }
    }

    private static func handle(_ wake: FeedWake, _ db: PGConnection, _ state: inout Connection, _ coordinator: FleetCoordinator) throws {
        if wake.greeted { coordinator.company.greeted() }
        if wake.tick {
            (state.ticked, state.catchUpDue) = (.now, false)
            try tick(db, &state, coordinator, stops: wake.stops)
        }
        coordinator.remoteOutput.wake(wake.outputRuns)
    }

    /// The listening connection, connected and LISTENing anew after a failure, and its pending
    /// notifications (nil on a new connection: the tick reads what any it missed announced).
    /// Once it listens, it greets the fleet: a host that believed itself alone notifies again (`FleetCompany`).
    private static func listening(_ state: inout Connection, _ host: FleetHost) throws -> (PGConnection, [(channel: String, payload: String)]?) {
        if let db = state.link.connection, db.isOK {
            return (db, try db.notifications())
        }
        let db = try state.link.open()
        try db.execute("LISTEN baton; LISTEN \(FeedWake.outputChannel)")
        try db.query("SELECT pg_notify('baton', $1)", [FeedWake.hello(host.incarnation)])
        // The next refresh hands the loop every run, not only what changed since the last.
        state.handed.forget()
        return (db, nil)
    }

    /// On the loop, a tick done: once no other is asked for, the reactor watches the socket (its
    /// input asks for a tick) and holds the one-second backstop.
    private func watch(_ fd: Int32) {
        let old = watching.access { state -> Reactor.TimerID?? in
            state.ticks -= 1
            guard !state.stopped, state.ticks == 0 else { return nil }
            let token = state.nextToken
            state.nextToken += 1
            state.socket = (fd, token)
            reactor.watch(fd) { [self] _ in
                let asked = watching.access { state -> Bool in state.socket?.token == token }
                if asked { tick() }
            }
            defer { state.timer = nil }
            return .some(state.timer)
        }
        guard let old else { return }
        if let old { reactor.cancel(old) }
        let timer = reactor.after(.seconds(1)) { [self] in tick() }
        watching.access { $0.timer = timer }
    }

    /// Takes the socket out of the reactor (on the loop).
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
        // This host's commits come to its feed in-process (`OwnCommit`).
        company.follow(hand: { [weak feed] commit in feed?.hand(commit) }, poke: { [weak feed] in feed?.poke() },
                       catchUp: { [weak feed] in feed?.catchUp() })
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
