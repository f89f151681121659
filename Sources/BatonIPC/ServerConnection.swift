import BatonCore
import CBatonSystem
import Synchronization
import Foundation

/// One client connection. Sending is safe from any thread; reading belongs to the server thread.
public final class ServerConnection: @unchecked Sendable, Hashable {
    /// The client's credentials from `SO_PEERCRED`.
    public let peer: Peer
    let fd: Int32
    let token: UInt64
    private let epoll: Int32
    /// The unsent output allowed: for request-answer connections, and once `markStreaming`.
    private let outputLimits: (normal: Int, streaming: Int)
    private let budget: OutputBudget
    /// Touched only by the server thread.
    var splitter: FrameSplitter
    /// When the request line now in the splitter began to arrive; server thread only.
    var partialSince: ContinuousClock.Instant?
    /// Guards the output buffer, the closed flag and the descriptor's lifetime.
    private let lock = Locked(OutputState())

    struct OutputState {
        var output: [UInt8] = []
        var closed = false
        var watchingOut = false
        /// Requests received and not yet fully answered.
        var inFlight = 0
        /// The client shut its sending side (or the server stopped reading it for good).
        var inputEnded = false
        /// Reading stopped until enough requests in flight are answered.
        var readingPaused = false
        /// The connection follows a stream (`watch`): the smaller output limit applies.
        var streaming = false
    }

    private let maxInFlight: Int

    init(fd: Int32, token: UInt64, peer: Peer, epoll: Int32, frameLimit: Int, outputLimits: (Int, Int), maxInFlight: Int = 1_024,
         budget: OutputBudget) {
        self.fd = fd
        self.token = token
        self.peer = peer
        self.epoll = epoll
        self.outputLimits = outputLimits
        self.budget = budget
        self.maxInFlight = max(maxInFlight, 1)
        self.splitter = FrameSplitter(limit: frameLimit)
    }

    public var isClosed: Bool { lock.withLock { $0.closed } }

    /// Marks the connection as following a stream: a client that stops reading it is dropped
    /// once `streamingOutputLimit` bytes wait.
    public func markStreaming() { lock.withLock { $0.streaming = true } }

    var isStreaming: Bool { lock.withLock { $0.streaming } }
    var unsentCount: Int { lock.withLock { $0.output.count } }

    /// Whether the server thread should read more from this connection now.
    var mayRead: Bool { lock.withLock { !$0.closed && !$0.inputEnded && !$0.readingPaused } }

    /// Counts a request received (server thread); true once the in-flight limit is reached.
    func beginRequest() -> Bool {
        lock.withLock { state in
            state.inFlight += 1
            return state.inFlight >= maxInFlight
        }
    }

    /// Marks a request fully answered (any thread): reading resumes below half the limit, and
    /// a connection whose client is done sending closes once nothing is left to answer.
    public func endRequest() {
        lock.withLock { state in
            state.inFlight = max(state.inFlight - 1, 0)
            if state.inputEnded && state.inFlight == 0 {
                shut(&state)
            } else if state.readingPaused && state.inFlight <= maxInFlight / 2 {
                state.readingPaused = false
                watch(&state)
            }
        }
    }

    /// Stops reading until requests in flight are answered (server thread).
    func pauseReading() {
        lock.withLock { state in
            state.readingPaused = true
            watch(&state)
        }
    }

    /// The client will send no more (server thread): close now if nothing is in flight, else
    /// once the last answer is sent.
    func endOfInput() {
        lock.withLock { state in
            state.inputEnded = true
            if state.inFlight == 0 { shut(&state) } else { watch(&state) }
        }
    }

    /// Sets the epoll interest from the state: input while reading, output while output waits.
    private func watch(_ state: inout OutputState) {
        guard !state.closed else { return }
        var events: UInt32 = 0
        if !state.inputEnded && !state.readingPaused { events |= Epoll.input | Epoll.readHangUp }
        if state.watchingOut { events |= Epoll.output }
        _ = baton_epoll_ctl(epoll, Epoll.modify, fd, events, token)
    }

    /// Sends one line (a newline is added). Drops the connection when the client does not read
    /// and its unsent output passes the limit.
    public func send(_ line: [UInt8]) {
        lock.withLock { state in
            guard !state.closed else { return }
            let before = state.output.count
            defer { budget.add(state.output.count - before) }
            if state.output.isEmpty {
                var sent = 0
                let total = line.count + 1
                var bytes = line
                bytes.append(UInt8(ascii: "\n"))
                while sent < total {
                    let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, total - sent, Int32(MSG_NOSIGNAL)) }
                    if n > 0 { sent += n; continue }
                    if n < 0 && errno == EINTR { continue }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                    shut(&state)
                    return
                }
                if sent < total { state.output.append(contentsOf: bytes[sent...]) }
            } else {
                state.output.append(contentsOf: line)
                state.output.append(UInt8(ascii: "\n"))
            }
            if state.output.count > (state.streaming ? outputLimits.streaming : outputLimits.normal) {
                shut(&state)
                return
            }
            if !state.output.isEmpty && !state.watchingOut {
                state.watchingOut = true
                watch(&state)
            }
        }
    }

    /// Writes what the socket takes of the buffered output (server thread, on EPOLLOUT).
    func flush() {
        lock.withLock { state in
            guard !state.closed else { return }
            let before = state.output.count
            defer { budget.add(state.output.count - before) }
            while !state.output.isEmpty {
                let n = state.output.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 { state.output.removeFirst(n); continue }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
                shut(&state)
                return
            }
            state.watchingOut = false
            watch(&state)
        }
    }

    /// Closes the connection; later sends are dropped.
    public func close() {
        lock.withLock { shut(&$0) }
    }

    private func shut(_ state: inout OutputState) {
        guard !state.closed else { return }
        state.closed = true
        budget.add(-state.output.count)
        state.output = []
        // The descriptor stays open until the server thread releases it, so it cannot be reused
        // under a concurrent send; shutdown wakes that thread with a hang-up.
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Closes the descriptor for good (server thread, once the connection is dropped).
    func release() {
        lock.withLock { state in
            if !state.closed { budget.add(-state.output.count) }
            state.closed = true
            state.output = []
            _ = baton_epoll_ctl(epoll, Epoll.delete, fd, 0, 0)
            Glibc.close(fd)
        }
    }

    public static func == (lhs: ServerConnection, rhs: ServerConnection) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// epoll(7) event bits and control operations, which Glibc's module does not export.
enum Epoll {
    static let input: UInt32 = 0x001
    static let output: UInt32 = 0x004
    static let error: UInt32 = 0x008
    static let hangUp: UInt32 = 0x010
    static let readHangUp: UInt32 = 0x2000
    static let add: Int32 = 1
    static let delete: Int32 = 2
    static let modify: Int32 = 3
}

/// The unsent output of every connection together; past its limit the server is woken to drop
/// the connections holding the most.
final class OutputBudget: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)
    private let wake: @Sendable () -> Void

    init(limit: Int, wake: @escaping @Sendable () -> Void) {
        self.limit = limit
        self.wake = wake
    }

    var total: Int { bytes.load(ordering: .relaxed) }
    var isOver: Bool { total > limit }

    func add(_ delta: Int) {
        guard delta != 0 else { return }
        let (_, now) = bytes.add(delta, ordering: .relaxed)
        if delta > 0, now > limit, now - delta <= limit { wake() }
    }
}
