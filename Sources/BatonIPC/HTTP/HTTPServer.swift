import CBatonSystem
import Foundation
import Synchronization

/// A small, strict HTTP/1.1 responder on a thread of its own: one request per connection,
/// a bounded head, a deadline for the whole exchange, a bounded number of connections, and
/// nothing ever waits on a client. The handler runs on this thread and must be quick.
public final class HTTPServer: @unchecked Sendable {
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
    private let epoll: Int32
    private let wakeFD: Int32
    private let limits: Limits
    private let handler: Handler
    private let stopping = Atomic<Bool>(false)

    private struct Connection {
        var input: [UInt8] = []
        var output: [UInt8] = []
        var sent = 0
        var deadline: ContinuousClock.Instant
    }

    /// Binds and listens; `start()` begins serving.
    public init(listening address: ListenAddress, limits: Limits = Limits(), handler: @escaping Handler) throws(SocketError) {
        var port: UInt16 = 0
        let fd = baton_tcp_listen(address.host, address.port, 64, &port)
        guard fd >= 0 else { throw .system("listen", path: address.description, errno: -fd) }
        listenFD = fd
        self.address = ListenAddress(host: address.host, port: port)
        self.limits = limits
        self.handler = handler
        epoll = baton_epoll_create()
        wakeFD = baton_eventfd()
        _ = baton_epoll_ctl(epoll, 1, listenFD, 0x001, UInt64(UInt32(bitPattern: listenFD)))
        _ = baton_epoll_ctl(epoll, 1, wakeFD, 0x001, UInt64(UInt32(bitPattern: wakeFD)))
    }

    public func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "baton-http"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Stops serving and closes every connection (from any thread; returns at once).
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func loop() {
        var connections: [Int32: Connection] = [:]
        var tokens = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let count = baton_epoll_wait(epoll, &tokens, &events, 64, 250)
            for index in 0..<Int(max(count, 0)) {
                let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: tokens[index]))
                if fd == wakeFD { continue }
                if fd == listenFD { accept(&connections); continue }
                if var connection = connections[fd] {
                    let open = serve(fd, &connection, events[index])
                    if open { connections[fd] = connection } else { drop(fd, &connections) }
                }
            }
            let now = ContinuousClock.now
            for (fd, connection) in connections where connection.deadline < now {
                // A head that never finished gets 408 when the socket takes it; then it is closed.
                if connection.output.isEmpty { _ = Self.send(fd, HTTPResponse.refusal(408, "the request took too long").bytes(headOnly: false)[...]) }
                drop(fd, &connections)
            }
        }
        for fd in connections.keys { close(fd) }
        close(listenFD)
        close(epoll)
        close(wakeFD)
    }

    private func accept(_ connections: inout [Int32: Connection]) {
        while true {
            let fd = baton_accept(listenFD)
            guard fd >= 0 else { return }
            guard connections.count < limits.maxConnections else {
                _ = Self.send(fd, HTTPResponse.refusal(503, "too many connections").bytes(headOnly: false)[...])
                close(fd)
                continue
            }
            connections[fd] = Connection(deadline: .now + limits.timeout)
            _ = baton_epoll_ctl(epoll, 1, fd, 0x001, UInt64(UInt32(bitPattern: fd)))
        }
    }

    /// Reads what came, answers once the head is complete, writes what the socket takes.
    /// Returns whether the connection stays open.
    private func serve(_ fd: Int32, _ connection: inout Connection, _ events: UInt32) -> Bool {
        if connection.output.isEmpty {
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return false }
            if n > 0 { connection.input += buffer[..<n] }
            switch HTTPRequestHead.parse(connection.input, limit: limits.headBytes, maxFields: limits.maxFields) {
            case .incomplete: return true
            case let .refused(status, reason): connection.output = HTTPResponse.refusal(status, reason).bytes(headOnly: false)
            case let .head(head, _): connection.output = handler(head).bytes(headOnly: head.method == "HEAD")
            }
            // Wait for room to write from now on, not for input.
            _ = baton_epoll_ctl(epoll, 3, fd, 0x004, UInt64(UInt32(bitPattern: fd)))
        }
        guard let sent = Self.send(fd, connection.output[connection.sent...]) else { return false }
        connection.sent += sent
        return connection.sent < connection.output.count
    }

    /// Writes what the socket takes; nil when the peer is gone.
    private static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int? {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n < 0 { return errno == EAGAIN || errno == EINTR ? 0 : nil }
        return n
    }

    private func drop(_ fd: Int32, _ connections: inout [Int32: Connection]) {
        _ = baton_epoll_ctl(epoll, 2, fd, 0, 0)
        close(fd)
        connections.removeValue(forKey: fd)
    }
}
