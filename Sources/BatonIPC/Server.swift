import BatonCore
import CBatonSystem
import Synchronization
import FoundationEssentials
import Glibc

/// What the server hands each frame and closed connection to.

/// Serves newline-delimited JSON on a listening Unix socket, on the event loop (the `Reactor`):
/// accepting, reading, framing and handing each request line to the delegate happen there, and so
/// do the writes of the answers (sent from another thread, they are posted to the loop).
public final class Server: Sendable {
    /// Limits that protect the daemon from its clients.
    public struct Limits: Sendable {
        /// The longest request line.
        public var frameLimit: Int
        /// Bytes of unsent responses a connection may hold before it is dropped.
        public var outputLimit: Int
        /// Connections open at once; further ones are answered with an error and closed.
        public var maxConnections: Int
        /// Connections one uid may hold open (root and the daemon's own user are not limited).
        public var maxConnectionsPerUser: Int
        /// How long a request line may take to arrive once begun (a client sending a byte a
        /// second holds a connection at most this long).
        public var requestTimeout: Duration

        /// Bytes of unsent output a streaming connection (`watch`) may hold: a watcher that stops
        /// reading is dropped sooner than a client waiting for one answer.
        public var streamingOutputLimit: Int
        /// Bytes of unsent output all connections together may hold; past it the connections
        /// holding the most are dropped, streaming ones first, until they fit again.
        public var totalOutputLimit: Int

        /// Requests of one connection being handled at once; past it the server stops reading that
        /// connection until half of them are answered (a client pipelining faster than it is served
        /// cannot pile up work).
        public var maxRequestsInFlight: Int

        public init(frameLimit: Int = 1 << 20, outputLimit: Int = 16 << 20, maxConnections: Int = 20_000,
                    maxConnectionsPerUser: Int = 256, requestTimeout: Duration = .seconds(10), maxRequestsInFlight: Int = 1_024,
                    streamingOutputLimit: Int = 1 << 20, totalOutputLimit: Int = 64 << 20) {
            self.maxRequestsInFlight = maxRequestsInFlight
            self.streamingOutputLimit = streamingOutputLimit
            self.totalOutputLimit = totalOutputLimit
            self.frameLimit = frameLimit
            self.outputLimit = outputLimit
            self.maxConnections = maxConnections
            self.maxConnectionsPerUser = maxConnectionsPerUser
            self.requestTimeout = requestTimeout
        }
    }

    private let listenFD: Int32
    private let reactor: Reactor
    private let limits: Limits
    private let delegate: any RequestHandler
    /// The loop's: no lock (`LoopOwned`).
    private let table: LoopOwned<Table>
    /// The connections open, as the loop last published it: other threads read this.
    private let openCount = Atomic<Int>(0)
    /// Unsent output of all connections, against `limits.totalOutputLimit`.
    let budget: OutputBudget
    /// A descriptor held in reserve, to answer a client when all others are in use.
    private let reserve: LoopOwned<Int32>

    /// What the loop keeps of the open connections; other threads only count them (`openCount`).
    struct Table {
        var connections: [UInt64: ServerConnection] = [:]
        var perUser: [UInt32: Int] = [:]
        var nextToken: UInt64 = 1
        var sweep: Reactor.TimerID?
        var stopped = false
        var finished: CheckedContinuation<Void, Never>?
        /// A restart in place: nothing accepted or read any more (`quiesce`).
        var quiescing = false
        /// Told once every connection has ended after `quiesce` (or its bound has passed).
        var quiet: [@Sendable () -> Void] = []
        /// A stop's quiesce closed the listening socket already (`closeListener`).
        var listenerClosed = false
    }

    /// The client connections open now.
    public var connectionCount: Int { openCount.load(ordering: .relaxed) }

    public init(listening fd: Int32, limits: Limits = Limits(), reactor: Reactor, delegate: any RequestHandler) throws(SocketError) {
        listenFD = fd
        self.limits = limits
        self.reactor = reactor
        self.delegate = delegate
        table = LoopOwned(Table(), on: reactor)
        reserve = LoopOwned(open("/dev/null", O_RDONLY | O_CLOEXEC), on: reactor)
        budget = OutputBudget(limit: limits.totalOutputLimit, reactor: reactor)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Serves on the event loop until `stop()`; then every connection and the listening socket are closed.
    public func run() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reactor.post { [self] in
                guard table.access({ state in
                    state.finished = continuation
                    return !state.stopped
                }) else { return finish() }
                budget.onOver { [weak self, reactor] in reactor.post { [weak self] in self?.enforceBudget() } }
                if !table.access({ $0.quiescing }) { reactor.watch(listenFD) { [self] _ in acceptAll() } }
                scheduleSweep()
            }
        }
    }

    /// Stops accepting and reading; `run()` returns once everything is closed.
    /// The listening socket (a restart in place passes a duplicate of it on).
    public var listeningDescriptor: Int32 { listenFD }

    public func stop() {
        reactor.post { [self] in
            let running = table.access { state -> Bool in
                defer { state.stopped = true }
                return !state.stopped && state.finished != nil
            }
            if running { finish() }
        }
    }

    private func finish() {
        let (connections, sweep, finished, quiet, closed) = table.access { state in
            defer { state.finished = nil; state.sweep = nil; state.quiet = []; state.listenerClosed = true }
            return (Array(state.connections.values), state.sweep, state.finished, state.quiet, state.listenerClosed)
        }
        if !closed {
            reactor.remove(listenFD)
            close(listenFD)
        }
        if let sweep { reactor.cancel(sweep) }
        for connection in connections { connection.close() }
        finished?.resume()
        for body in quiet { body() }
    }

    /// A restart in place (`ServerConnection+Quiesce`): stops accepting (a client that connects
    /// from now on waits in the listening socket's backlog, for whoever holds it next) and reading
    /// at once (posted to the loop now, in order with what this thread posts next); each
    /// connection ends once the requests it took are answered, with the line that says so.
    /// `quiet` is called once every connection has ended, or `limit` has passed (a client that
    /// does not read its answers): `stop` closes what is left.
    public func quiesce(within limit: Duration, quiet: @escaping @Sendable () -> Void) {
        let once = Once(quiet)
        reactor.post { [self] in
            let connections = table.access { state -> [ServerConnection]? in
                guard !state.stopped else { return nil }
                state.quiescing = true
                state.quiet.append { once.run() }
                return Array(state.connections.values)
            }
            guard let connections else { return once.run() }
            reactor.remove(listenFD)
            for connection in connections { connection.quiesce() }
            reactor.after(limit) { once.run() }
            wakeIfQuiet()
        }
    }

    /// A stop's quiesce, where no batond takes this socket over: the listening socket is closed
    /// now rather than at `stop` (its backlog would take connections nobody answers, reset at
    /// `stop`: a client sent again into it). After `quiesce` only (posted in order after it).
    public func closeListener() {
        reactor.post { [self] in
            let open = table.access { state -> Bool in
                guard state.quiescing, !state.listenerClosed else { return false }
                state.listenerClosed = true
                return true
            }
            // Shut down first: a child being spawned at this instant holds a copy of the socket
            // until its exec, and a close alone would leave the socket listening in that copy.
            if open { shutdown(listenFD, Int32(SHUT_RDWR)); close(listenFD) }
        }
    }

    /// Quiescing with no connection left: whoever waits is told.
    private func wakeIfQuiet() {
        let quiet = table.access { state -> [@Sendable () -> Void] in
            guard state.quiescing, state.connections.isEmpty else { return [] }
            defer { state.quiet = [] }
            return state.quiet
        }
        for body in quiet { body() }
    }

    /// Every half second: slow request lines are dropped, and the output budget enforced.
    private func scheduleSweep() {
        let timer = reactor.after(.milliseconds(500)) { [self] in
            guard !table.access({ $0.stopped }) else { return }
            dropSlowRequests()
            if budget.isOver { enforceBudget() }
            scheduleSweep()
        }
        table.access { $0.sweep = timer }
    }

    private func acceptAll() {
        // Quiescing: a connection waits in the backlog for the next batond.
        if table.access({ $0.quiescing }) { return }
        while true {
            let fd = baton_accept(listenFD)
            if fd < 0 {
                if errno == EINTR { continue }
                if errno == EMFILE || errno == ENFILE { refuseWithoutDescriptors() }
                return
            }
            var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
            _ = baton_peer_credentials(fd, &uid, &gid, &pid)
            let refusal = table.access { state -> String? in
                if state.connections.count >= limits.maxConnections { return "batond has too many connections" }
                if uid != 0 && uid != geteuid() && state.perUser[uid, default: 0] >= limits.maxConnectionsPerUser {
                    return "uid \(uid) has \(limits.maxConnectionsPerUser) connections open to batond, its limit"
                }
                return nil
            }
            if let refusal {
                let line = #"{"ok":false,"error":{"code":"busy","message":"\#(refusal)"}}"# + "\n"
                _ = line.withCString { Glibc.write(fd, $0, strlen($0)) }
                Glibc.close(fd)
                continue
            }
            let connection = table.access { state -> ServerConnection in
                defer { state.nextToken += 1 }
                let connection = ServerConnection(fd: fd, token: state.nextToken, peer: Peer(uid: uid, gid: gid, pid: pid),
                                                  reactor: reactor, frameLimit: limits.frameLimit,
                                                  outputLimits: (limits.outputLimit, limits.streamingOutputLimit),
                                                  maxInFlight: limits.maxRequestsInFlight, budget: budget,
                                                  onClose: { [weak self] in self?.dropped($0) })
                state.connections[connection.token] = connection
                state.perUser[uid, default: 0] += 1
                return connection
            }
            openCount.add(1, ordering: .relaxed)
            reactor.watch(fd, events: Epoll.input | Epoll.readHangUp) { [self] mask in ready(connection, mask) }
        }
    }

    /// What the loop does when a connection's socket is ready.
    private func ready(_ connection: ServerConnection, _ mask: UInt32) {
        if mask & Epoll.output != 0 { connection.flush() }
        if mask & (Epoll.input | Epoll.hangUp | Epoll.error) != 0 { readAll(connection) }
        // A full hang-up or an error: nothing sent can arrive any more. (Reported even with no
        // interest set, it would otherwise wake the loop forever.)
        if mask & (Epoll.hangUp | Epoll.error) != 0 { connection.close() }
    }

    private func readAll(_ connection: ServerConnection) {
        // The loop's read buffer: reads happen on its thread only, one at a time (another
        // reactor in the process has its own).
        let buffer = reactor.readBuffer
        while connection.mayRead {
            let n = read(connection.fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                let frames = connection.withInput { state -> [FrameSplitter.Frame] in
                    let frames = state.splitter.feed(chunk)
                    if state.splitter.buffered == 0 { state.partialSince = nil }
                    else if state.partialSince == nil { state.partialSince = .now }
                    return frames
                }
                var full = false
                for frame in frames {
                    full = connection.beginRequest()
                    delegate.received(frame, from: connection)
                }
                if full { connection.pauseReading() }
                if n < buffer.count { return }
            } else if n == 0 {
                // The client is done sending; its requests still in flight get their answers.
                connection.endOfInput()
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else {
                connection.close()
            }
        }
    }

    /// Closes connections whose request line has been arriving for longer than the request timeout.
    /// (`now`: a test sweeps as if long after, with no wait.)
    func dropSlowRequests(now: ContinuousClock.Instant = .now) {
        let deadline = now - limits.requestTimeout
        let slow = table.access { $0.connections.values.filter { $0.withInput { $0.partialSince }.map { $0 < deadline } ?? false } }
        for connection in slow {
            let message = "request line not finished within \(DurationText.format(limits.requestTimeout)); closing"
            connection.send(Array(#"{"ok":false,"error":{"code":"bad_request","message":"\#(message)"}}"#.utf8))
            connection.close()
        }
    }

    /// Out of file descriptors: the pending client would wait in the kernel's queue for nothing.
    /// A descriptor kept in reserve is given up to accept it, tell it why, and close it.
    private func refuseWithoutDescriptors() {
        let kept = reserve.access { reserve in
            defer { reserve = -1 }
            return reserve
        }
        guard kept >= 0 else { return }
        Glibc.close(kept)
        let fd = baton_accept(listenFD)
        if fd >= 0 {
            let line = #"{"ok":false,"error":{"code":"busy","message":"batond has no file descriptors left for a connection"}}"# + "\n"
            _ = line.withCString { Glibc.write(fd, $0, strlen($0)) }
            Glibc.close(fd)
        }
        let again = open("/dev/null", O_RDONLY | O_CLOEXEC)
        reserve.access { $0 = again }
    }

    /// Drops the connections holding the most unsent output, streaming ones first, until all
    /// of it fits in three quarters of the total limit again; what this turn wrote is sent first.
    private func enforceBudget() {
        let connections = table.access { Array($0.connections.values) }
        for connection in connections { connection.sendTurnOutput() }
        let candidates = connections.map { ($0, $0.unsentCount) }
            .filter { $0.1 > 0 }
            .sorted { ($0.0.isStreaming ? 1 : 0, $0.1) > ($1.0.isStreaming ? 1 : 0, $1.1) }
        for (connection, _) in candidates where budget.total > budget.limit * 3 / 4 {
            connection.close()
        }
    }

    /// A connection closed (loop): forgotten, and the delegate told.
    private func dropped(_ connection: ServerConnection) {
        let known = table.access { state -> Bool in
            guard state.connections.removeValue(forKey: connection.token) != nil else { return false }
            let uid = connection.peer.uid
            if let count = state.perUser[uid] { state.perUser[uid] = count > 1 ? count - 1 : nil }
            return true
        }
        guard known else { return }
        openCount.subtract(1, ordering: .relaxed)
        delegate.closed(connection)
        wakeIfQuiet()
    }
}

/// Calls its body the first time `run` is called, from whichever thread.
final class Once: Sendable {
    private let done = Atomic<Bool>(false)
    private let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    func run() { if !done.exchange(true, ordering: .acquiringAndReleasing) { body() } }
}
