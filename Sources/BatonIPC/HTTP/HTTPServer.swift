import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc
import Synchronization

/// A small, strict HTTP/1.1 server on the event loop, with the connections of the socket server
/// (`ServerConnection`): one request per connection, a bounded head (and body, for a handler that
/// reads one), a deadline from accept to the last byte of the answer (and, where `requestTimeout`
/// asks, a shorter one to the whole request for peers outside the reserve), a bounded number of
/// connections (`PeerAdmission`), and nothing ever waits on a client. `/metrics` and the dashboard are served by it.
/// The handler runs on the loop and must be quick; it answers its exchange then or later, from
/// any thread, or turns it into an event stream.
public final class HTTPServer: Sendable {
    public struct Limits: Sendable {
        public var headBytes = 8_192
        public var maxFields = 64
        public var bodyBytes = 16_384
        public var maxConnections = 64
        /// The most connections one peer (a uid, or every peer on another host together) holds,
        /// unless it is an owner.
        public var maxConnectionsPerPeer = 8
        /// Connections only owners and kept peers may take: others together never hold more than the rest.
        public var reservedForOwners = 16
        /// The server's own users: the process's effective uid by default.
        public var owners: Set<UInt32> = [geteuid()]
        /// The peers, besides owners, the reserve is kept for (each still within its share),
        /// asked again at each accept so that a reload changes them; nil: none.
        public var kept: (@Sendable () -> Set<PeerAdmission.Peer>)?
        /// From accept to the last byte of the answer (an event stream's head included).
        public var timeout: Duration = .seconds(5)
        /// For a peer that is neither an owner nor kept: from accept to the whole request (head,
        /// and the body its handler reads), then `timeout` for the answer; nil: `timeout` for all.
        /// Such a peer's slow or silent connection gives its place back sooner.
        public var requestTimeout: Duration?
        /// Unsent bytes an event stream may hold before its reader is dropped as too slow.
        public var streamBuffer = 1 << 20
        public init() {}
    }

    public typealias Handler = @Sendable (HTTPRequestHead, HTTPExchange) -> Void

    /// The address bound (with the port chosen, when 0 was asked for).
    public let address: ListenAddress
    private let listenFD: Int32
    let limits: Limits
    private let handler: Handler
    let reactor: Reactor
    private let budget: OutputBudget
    /// The loop's, with no lock.
    private let table: LoopOwned<Table>
    /// The connections open, as the loop last published it: other threads read this.
    private let openCount = Atomic<Int>(0)

    /// The loop's record of what is open.
    struct Table {
        var connections: [UInt64: ServerConnection] = [:]
        /// Who holds how many connections; each connection's peer, by token.
        var admission: PeerAdmission
        var peers: [UInt64: PeerAdmission.Peer] = [:]
        /// Connections on `requestTimeout` whose request has not all come yet.
        var hurried: Set<UInt64> = []
        var nextToken: UInt64 = 1
        var sweep: Reactor.TimerID?
        var stopped = false
        /// A restart in place: nothing accepted any more (`quiesce`); told once no connection is left.
        var quiescing = false
        var quiet: [@Sendable () -> Void] = []
    }

    /// Binds and listens; `start()` begins serving.
    public init(listening address: ListenAddress, limits: Limits = Limits(), reactor: Reactor,
                handler: @escaping Handler) throws(SocketError) {
        var port: UInt16 = 0
        let fd = baton_tcp_listen(address.host, address.port, 64, &port)
        guard fd >= 0 else { throw .system("listen", path: address.description, errno: -fd) }
        listenFD = fd
        self.address = ListenAddress(host: address.host, port: port)
        self.limits = limits
        self.handler = handler
        self.reactor = reactor
        budget = OutputBudget(limit: 256 << 20, reactor: reactor)
        table = LoopOwned(Table(admission: PeerAdmission(maxConnections: limits.maxConnections, maxPerPeer: limits.maxConnectionsPerPeer,
                                                      reserved: limits.reservedForOwners, owners: limits.owners)), on: reactor)
    }

    /// Serves on a socket that already listens (one systemd passed): it becomes the server's.
    public init(descriptor fd: Int32, limits: Limits = Limits(), reactor: Reactor,
                handler: @escaping Handler) throws(SocketError) {
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0, accepting == 1,
              let address = TCPPeer.localAddress(of: fd) else {
            throw .system("listen", path: "passed socket \(fd)", errno: EINVAL)
        }
        // Accepting runs until EAGAIN: the socket must not block.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        listenFD = fd
        self.address = address
        self.limits = limits
        self.handler = handler
        self.reactor = reactor
        budget = OutputBudget(limit: 256 << 20, reactor: reactor)
        table = LoopOwned(Table(admission: PeerAdmission(maxConnections: limits.maxConnections, maxPerPeer: limits.maxConnectionsPerPeer,
                                                      reserved: limits.reservedForOwners, owners: limits.owners)), on: reactor)
    }

    /// A server whose handler answers at once from the head alone (it reads no bodies).
    public convenience init(listening address: ListenAddress, limits: Limits = Limits(), reactor: Reactor,
                            answer: @escaping @Sendable (HTTPRequestHead) -> HTTPResponse) throws(SocketError) {
        try self.init(listening: address, limits: limits, reactor: reactor) { head, exchange in
            exchange.answer(answer(head), headOnly: head.method == "HEAD")
        }
    }

    /// Begins serving on the loop.
    public func start() {
        reactor.post { [self] in
            guard !table.access({ $0.stopped }) else { return }
            if !table.access({ $0.quiescing }) { reactor.watch(listenFD) { [self] _ in acceptAll() } }
            scheduleSweep()
        }
    }

    /// Stops serving and closes every connection (from any thread; returns at once).
    public func stop() {
        reactor.post { [self] in
            let (connections, sweep, first) = table.access { state in
                defer { state.stopped = true; state.sweep = nil }
                return (Array(state.connections.values), state.sweep, !state.stopped)
            }
            guard first else { return }
            if let sweep { reactor.cancel(sweep) }
            reactor.remove(listenFD)
            close(listenFD)
            for connection in connections { connection.close() }
            wakeIfQuiet()
        }
    }

    /// The listening socket (a restart in place passes a duplicate of it on).
    public var listeningDescriptor: Int32 { listenFD }

    /// A restart in place: stops accepting at once (a client that connects from now on waits in
    /// the listening socket's backlog, for whoever holds it next); the requests of the connections
    /// open are read and answered as usual. `quiet` is called once none is left, or `limit` has
    /// passed (a `?wait` hook following a long run): `stop` closes what is left.
    public func quiesce(within limit: Duration, quiet: @escaping @Sendable () -> Void) {
        let once = Once(quiet)
        reactor.post { [self] in
            let first = table.access { state -> Bool in
                guard !state.stopped, !state.quiescing else { return false }
                state.quiescing = true
                state.quiet.append { once.run() }
                return true
            }
            guard first else { return once.run() }
            reactor.remove(listenFD)
            reactor.after(limit) { once.run() }
            wakeIfQuiet()
        }
    }

    /// Quiescing (or stopped) with no connection left: whoever waits is told.
    private func wakeIfQuiet() {
        let quiet = table.access { state -> [@Sendable () -> Void] in
            guard state.quiescing, state.connections.isEmpty || state.stopped else { return [] }
            defer { state.quiet = [] }
            return state.quiet
        }
        for body in quiet { body() }
    }

    /// The connections open now (event streams included).
    public var connectionCount: Int { openCount.load(ordering: .relaxed) }

    private func acceptAll() {
        if table.access({ $0.quiescing }) { return }
        while case let fd = baton_accept(listenFD), fd >= 0 {
            let peer = PeerAdmission.Peer(TCPPeer.uid(of: fd))
            let kept = limits.kept?()
            let (decision, reason, standing) = table.access { state in
                if let kept { state.admission.keep(kept) }
                let decision = state.admission.admit(peer)
                return (decision, state.admission.reason(decision, peer), state.admission.standing(peer))
            }
            guard decision == .admitted else {
                let bytes = HTTPResponse.refusal(503, reason).bytes(headOnly: false)
                _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(fd)
                continue
            }
            let hurried = standing == .other ? limits.requestTimeout : nil
            let connection = table.access { state -> ServerConnection in
                defer { state.nextToken += 1 }
                state.peers[state.nextToken] = peer
                if hurried != nil { state.hurried.insert(state.nextToken) }
                let connection = ServerConnection(fd: fd, token: state.nextToken, peer: Peer(uid: 0, gid: 0, pid: 0), reactor: reactor,
                                                  frameLimit: limits.headBytes, outputLimits: (64 << 20, limits.streamBuffer), maxInFlight: 1,
                                                  budget: budget, onClose: { [weak self] in self?.dropped($0) })
                state.connections[connection.token] = connection
                return connection
            }
            openCount.add(1, ordering: .relaxed)
            connection.withInput { $0.deadline = .now + (hurried ?? limits.timeout) }
            reactor.watch(fd, events: Epoll.input | Epoll.readHangUp) { [self] mask in ready(connection, mask) }
        }
    }

    private func ready(_ connection: ServerConnection, _ mask: UInt32) {
        if mask & Epoll.output != 0 { connection.flush() }
        if mask & (Epoll.input | Epoll.hangUp | Epoll.error) != 0, connection.mayRead { read(connection) }
        if mask & (Epoll.hangUp | Epoll.error) != 0 { connection.close() }
    }

    /// Reads what came: the head, then (when the handler asked for one) the body.
    private func read(_ connection: ServerConnection) {
        var buffer = [UInt8](repeating: 0, count: 8_192)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(connection.fd, $0.baseAddress, $0.count) }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return connection.close() }
        guard n > 0 else { return }
        let (input, exchange) = connection.withInput { state -> ([UInt8], HTTPExchange?) in
            state.input += buffer[..<n]
            return (state.input, state.exchange)
        }
        if let exchange { return exchange.received(input) }
        switch HTTPRequestHead.parse(input, limit: limits.headBytes, maxFields: limits.maxFields) {
        case .incomplete:
            return
        case let .refused(status, reason):
            HTTPExchange(server: self, connection: connection, bodyStart: input.count).answer(.refusal(status, reason))
        case let .head(head, length):
            let exchange = HTTPExchange(server: self, connection: connection, bodyStart: length)
            connection.withInput { $0.exchange = exchange }
            handler(head, exchange)
            exchange.received(input)
            exchange.requestInIfNoBody()
        }
    }

    /// The whole request of a connection on `requestTimeout` has come: its answer has `timeout`.
    func requestIn(_ connection: ServerConnection) {
        guard table.access({ $0.hurried.remove(connection.token) != nil }) else { return }
        connection.withInput { state in
            if state.deadline != nil { state.deadline = .now + limits.timeout }
        }
    }

    /// The peer a connection was admitted as.
    func peer(of connection: ServerConnection) -> PeerAdmission.Peer? {
        table.access { $0.peers[connection.token] }
    }

    /// Every 250 ms: an exchange past its deadline gets 408 if nothing was answered yet, and is
    /// closed (an event stream has no deadline once it has begun).
    private func scheduleSweep() {
        let timer = reactor.after(.milliseconds(250)) { [self] in
            guard !table.access({ $0.stopped }) else { return }
            let now = ContinuousClock.now
            let late = table.access { $0.connections.values.filter { $0.withInput { $0.deadline.map { $0 < now } ?? false } } }
            for connection in late {
                if connection.withInput({ !$0.inputEnded }) {
                    let refusal = HTTPResponse.refusal(408, "the request took too long").bytes(headOnly: false)
                    _ = refusal.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                connection.close()
            }
            scheduleSweep()
        }
        table.access { $0.sweep = timer }
    }

    private func dropped(_ connection: ServerConnection) {
        let exchange = connection.withInput { state in defer { state.exchange = nil }; return state.exchange }
        let known = table.access { state in
            state.hurried.remove(connection.token)
            if let peer = state.peers.removeValue(forKey: connection.token) { state.admission.release(peer) }
            return state.connections.removeValue(forKey: connection.token) != nil
        }
        if known { openCount.subtract(1, ordering: .relaxed) }
        exchange?.closed()
        wakeIfQuiet()
    }
}
