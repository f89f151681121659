import BatonCore
import CBatonSystem
import Foundation

/// A small, strict HTTP/1.1 responder on the event loop, with the connections of the socket
/// server (`ServerConnection`): one request per connection, a bounded head, a deadline for the
/// whole exchange, a bounded number of connections, and nothing ever waits on a client. The
/// handler runs on the loop and must be quick.
public final class HTTPServer: Sendable {
    public struct Limits: Sendable {
        public var headBytes = 8_192
        public var maxFields = 64
        public var maxConnections = 64
        /// From accept to the last byte of the answer.
        public var timeout: Duration = .seconds(5)
        public init() {}
    }

    public typealias Handler = @Sendable (HTTPRequestHead) -> HTTPResponse

    /// The address bound (with the port chosen, when 0 was asked for).
    public let address: ListenAddress
    private let listenFD: Int32
    private let limits: Limits
    private let handler: Handler
    private let reactor: Reactor
    private let budget = OutputBudget(limit: 64 << 20)
    private let table = Locked(Table())

    /// The loop's record of what is open.
    struct Table {
        var connections: [UInt64: ServerConnection] = [:]
        var nextToken: UInt64 = 1
        var sweep: Reactor.TimerID?
        var stopped = false
    }

    /// Binds and listens; `start()` begins serving.
    public init(listening address: ListenAddress, limits: Limits = Limits(), reactor: Reactor = .shared,
                handler: @escaping Handler) throws(SocketError) {
        var port: UInt16 = 0
        let fd = baton_tcp_listen(address.host, address.port, 64, &port)
        guard fd >= 0 else { throw .system("listen", path: address.description, errno: -fd) }
        listenFD = fd
        self.address = ListenAddress(host: address.host, port: port)
        self.limits = limits
        self.handler = handler
        self.reactor = reactor
    }

    /// Begins serving on the loop.
    public func start() {
        reactor.post { [self] in
            guard !table.withLock({ $0.stopped }) else { return }
            reactor.watch(listenFD) { [self] _ in acceptAll() }
            scheduleSweep()
        }
    }

    /// Stops serving and closes every connection (from any thread; returns at once).
    public func stop() {
        reactor.post { [self] in
            let (connections, sweep, first) = table.withLock { state in
                defer { state.stopped = true; state.sweep = nil }
                return (Array(state.connections.values), state.sweep, !state.stopped)
            }
            guard first else { return }
            if let sweep { reactor.cancel(sweep) }
            reactor.remove(listenFD)
            close(listenFD)
            for connection in connections { connection.close() }
        }
    }

    private func acceptAll() {
        while case let fd = baton_accept(listenFD), fd >= 0 {
            guard table.withLock({ $0.connections.count < limits.maxConnections }) else {
                let bytes = HTTPResponse.refusal(503, "too many connections").bytes(headOnly: false)
                _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(fd)
                continue
            }
            let connection = table.withLock { state -> ServerConnection in
                defer { state.nextToken += 1 }
                let connection = ServerConnection(fd: fd, token: state.nextToken, peer: Peer(uid: 0, gid: 0, pid: 0), reactor: reactor,
                                                  frameLimit: limits.headBytes, outputLimits: (16 << 20, 16 << 20), maxInFlight: 1,
                                                  budget: budget, onClose: { [weak self] in self?.dropped($0) })
                state.connections[connection.token] = connection
                return connection
            }
            connection.withInput { $0.deadline = .now + limits.timeout }
            reactor.watch(fd, events: Epoll.input | Epoll.readHangUp) { [self] mask in ready(connection, mask) }
        }
    }

    private func ready(_ connection: ServerConnection, _ mask: UInt32) {
        if mask & Epoll.output != 0 { connection.flush() }
        if mask & (Epoll.input | Epoll.hangUp | Epoll.error) != 0, connection.mayRead { read(connection) }
        if mask & (Epoll.hangUp | Epoll.error) != 0 { connection.close() }
    }

    /// Reads what came; answers once the head is complete, then closes once it is written.
    private func read(_ connection: ServerConnection) {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(connection.fd, $0.baseAddress, $0.count) }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return connection.close() }
        guard n > 0 else { return }
        let input = connection.withInput { state -> [UInt8] in
            state.input += buffer[..<n]
            return state.input
        }
        let answer: [UInt8]
        switch HTTPRequestHead.parse(input, limit: limits.headBytes, maxFields: limits.maxFields) {
        case .incomplete: return
        case let .refused(status, reason): answer = HTTPResponse.refusal(status, reason).bytes(headOnly: false)
        case let .head(head, _): answer = handler(head).bytes(headOnly: head.method == "HEAD")
        }
        _ = connection.beginRequest()
        connection.write(answer)
        connection.closeWhenWritten()
    }

    /// Every 250 ms: an exchange past its deadline gets 408 if nothing was answered yet, and is closed.
    private func scheduleSweep() {
        let timer = reactor.after(.milliseconds(250)) { [self] in
            guard !table.withLock({ $0.stopped }) else { return }
            let now = ContinuousClock.now
            let late = table.withLock { $0.connections.values.filter { $0.withInput { $0.deadline.map { $0 < now } ?? false } } }
            for connection in late {
                if connection.withInput({ !$0.inputEnded }) {
                    let refusal = HTTPResponse.refusal(408, "the request took too long").bytes(headOnly: false)
                    _ = refusal.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                connection.close()
            }
            scheduleSweep()
        }
        table.withLock { $0.sweep = timer }
    }

    private func dropped(_ connection: ServerConnection) {
        _ = table.withLock { $0.connections.removeValue(forKey: connection.token) }
    }
}
