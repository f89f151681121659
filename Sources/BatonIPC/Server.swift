import BatonCore
import CBatonSystem
import Synchronization
import Foundation

/// What the server hands each frame and closed connection to.
public protocol ServerDelegate: AnyObject, Sendable {
    /// A complete request line (or `.oversized`) arrived; called on the server's thread, so it must not block.
    func received(_ frame: FrameSplitter.Frame, on connection: ServerConnection)
    /// The peer went away or the connection was dropped.
    func closed(_ connection: ServerConnection)
}

/// Serves newline-delimited JSON on a listening Unix socket with one epoll thread.
///
/// Reads happen on that thread; responses may be sent from any thread and go straight to the
/// socket when it has room, or wait in a bounded buffer for the thread to flush them.
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
    private let epoll: Int32
    private let wakeFD: Int32
    private let limits: Limits
    private let delegate: any ServerDelegate
    /// Open connections by token; only the server thread adds and removes.
    private let connections = Locked<[UInt64: ServerConnection]>([:])

    /// The client connections open now.
    public var connectionCount: Int { connections.withLock { $0.count } }
    /// Open connections per uid; only the server thread touches it.
    private nonisolated(unsafe) var perUser: [UInt32: Int] = [:]
    private let stopping = Atomic<Bool>(false)
    /// A descriptor held in reserve, to answer a client when all others are in use.
    private let reserve = Locked(open("/dev/null", O_RDONLY | O_CLOEXEC))
    /// Unsent output of all connections, against `limits.totalOutputLimit`.
    let budget: OutputBudget
    private let finished = Locked<[CheckedContinuation<Void, Never>]?>([])

    private static let listenToken: UInt64 = 0
    private static let wakeToken: UInt64 = 1

    public init(listening fd: Int32, limits: Limits = Limits(), delegate: any ServerDelegate) throws(SocketError) {
        listenFD = fd
        self.limits = limits
        self.delegate = delegate
        epoll = baton_epoll_create()
        wakeFD = baton_eventfd()
        let wake = wakeFD
        budget = OutputBudget(limit: limits.totalOutputLimit) {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
        }
        guard epoll >= 0, wakeFD >= 0 else { throw .system("epoll_create", path: "", errno: errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = baton_epoll_ctl(epoll, Epoll.add, fd, Epoll.input, Self.listenToken)
        _ = baton_epoll_ctl(epoll, Epoll.add, wakeFD, Epoll.input, Self.wakeToken)
    }

    /// Serves until `stop()`; then closes every connection and the listening socket.
    public func run() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                loop()
                continuation.resume()
            }
            thread.name = "baton-server"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Stops accepting and reading; `run()` returns once the thread has closed everything.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func loop() {
        var tokens = [UInt64](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        var nextToken: UInt64 = 2
        var lastSweep = ContinuousClock.now
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let count = baton_epoll_wait(epoll, &tokens, &events, 256, 500)
            if count < 0 { break }
            if ContinuousClock.now - lastSweep >= .milliseconds(500) {
                lastSweep = ContinuousClock.now
                dropSlowRequests()
                if budget.isOver { enforceBudget() }
            }
            for index in 0..<Int(count) {
                switch tokens[index] {
                case Self.listenToken:
                    acceptAll(&nextToken)
                case Self.wakeToken:
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    if budget.isOver { enforceBudget() }
                default:
                    guard let connection = connections.withLock({ $0[tokens[index]] }) else { continue }
                    let mask = events[index]
                    if mask & Epoll.output != 0 { connection.flush() }
                    if mask & (Epoll.input | Epoll.hangUp | Epoll.error) != 0 {
                        readAll(connection, buffer)
                    }
                    // A full hang-up or an error: nothing sent can arrive any more. (Reported even
                    // with no interest set, it would otherwise wake this loop forever, as it did
                    // for a watcher that closed its connection.)
                    if mask & (Epoll.hangUp | Epoll.error) != 0 { connection.close() }
                    if connection.isClosed { drop(connection) }
                }
            }
        }
        for connection in connections.withLock({ Array($0.values) }) {
            connection.close()
            drop(connection)
        }
        close(listenFD)
        close(epoll)
        close(wakeFD)
    }

    private func acceptAll(_ nextToken: inout UInt64) {
        while true {
            let fd = baton_accept(listenFD)
            if fd < 0 {
                if errno == EINTR { continue }
                if errno == EMFILE || errno == ENFILE { refuseWithoutDescriptors() }
                return
            }
            var uid: UInt32 = 0, gid: UInt32 = 0, pid: Int32 = 0
            _ = baton_peer_credentials(fd, &uid, &gid, &pid)
            let token = nextToken
            nextToken += 1
            let connection = ServerConnection(fd: fd, token: token, peer: Peer(uid: uid, gid: gid, pid: pid),
                                              epoll: epoll, frameLimit: limits.frameLimit,
                                              outputLimits: (limits.outputLimit, limits.streamingOutputLimit),
                                              maxInFlight: limits.maxRequestsInFlight, budget: budget)
            let full = connections.withLock { $0.count >= limits.maxConnections }
            let limited = uid != 0 && uid != geteuid() && perUser[uid, default: 0] >= limits.maxConnectionsPerUser
            if full || limited {
                let message = full ? "batond has too many connections"
                    : "uid \(uid) has \(limits.maxConnectionsPerUser) connections open to batond, its limit"
                let line = #"{"ok":false,"error":{"code":"busy","message":"\#(message)"}}"# + "\n"
                _ = line.withCString { write(fd, $0, strlen($0)) }
                Glibc.close(fd)
                continue
            }
            perUser[uid, default: 0] += 1
            connections.withLock { $0[token] = connection }
            _ = baton_epoll_ctl(epoll, Epoll.add, fd, Epoll.input | Epoll.readHangUp, token)
        }
    }

    private func readAll(_ connection: ServerConnection, _ buffer: UnsafeMutableRawBufferPointer) {
        while connection.mayRead {
            let n = read(connection.fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                var full = false
                for frame in connection.splitter.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) {
                    full = connection.beginRequest()
                    delegate.received(frame, on: connection)
                }
                if connection.splitter.buffered == 0 { connection.partialSince = nil }
                else if connection.partialSince == nil { connection.partialSince = .now }
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
    private func dropSlowRequests() {
        let deadline = ContinuousClock.now - limits.requestTimeout
        let slow = connections.withLock { $0.values.filter { $0.partialSince.map { $0 < deadline } ?? false } }
        for connection in slow {
            let message = "request line not finished within \(DurationText.format(limits.requestTimeout)); closing"
            connection.send(Array(#"{"ok":false,"error":{"code":"bad_request","message":"\#(message)"}}"#.utf8))
            connection.close()
            drop(connection)
        }
    }

    /// Out of file descriptors: the pending client would wait in the kernel's queue for nothing.
    /// A descriptor kept in reserve is given up to accept it, tell it why, and close it.
    private func refuseWithoutDescriptors() {
        reserve.withLock { reserve in
            guard reserve >= 0 else { return }
            Glibc.close(reserve)
            let fd = baton_accept(listenFD)
            if fd >= 0 {
                let line = #"{"ok":false,"error":{"code":"busy","message":"batond has no file descriptors left for a connection"}}"# + "\n"
                _ = line.withCString { write(fd, $0, strlen($0)) }
                Glibc.close(fd)
            }
            reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
    }

    /// Drops the connections holding the most unsent output, streaming ones first, until all
    /// of it fits in three quarters of the total limit again.
    private func enforceBudget() {
        let candidates = connections.withLock { Array($0.values) }
            .map { ($0, $0.unsentCount) }
            .filter { $0.1 > 0 }
            .sorted { ($0.0.isStreaming ? 1 : 0, $0.1) > ($1.0.isStreaming ? 1 : 0, $1.1) }
        for (connection, _) in candidates where budget.total > budget.limit * 3 / 4 {
            connection.close()
        }
    }

    private func drop(_ connection: ServerConnection) {
        guard connections.withLock({ $0.removeValue(forKey: connection.token) }) != nil else { return }
        if let count = perUser[connection.peer.uid] {
            perUser[connection.peer.uid] = count > 1 ? count - 1 : nil
        }
        connection.release()
        delegate.closed(connection)
    }
}
