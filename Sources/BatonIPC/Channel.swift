import BatonCore
import FoundationEssentials
import Glibc

/// A connection to batond on the event loop that carries many requests at once, each matched to
/// its answer by the id the channel gives it (the protocol's `id`): `call` completes with the
/// final answer, and the request's events (a wait's updates, a watch's stream) go to its handler
/// before that. It connects on the first call and again on the first call after batond went away;
/// every request in flight when the connection ends fails with the reason. Nothing blocks: the
/// socket is written and read on the loop only, and completions run there; its state is the
/// loop's, with no lock (`LoopOwned`).
public final class Channel: Sendable {
    public typealias Done = @Sendable (Result<Response, ChannelError>) -> Void
    public typealias Events = @Sendable (Response, [UInt8]) -> Void

    public let path: String
    private let reactor: Reactor
    private let state: LoopOwned<State>

    struct State {
        var fd: Int32 = -1
        var splitter = FrameSplitter(limit: 64 << 20)
        var output: [UInt8] = []
        var sent = 0
        var watchingOut = false
        var pending: [Int64: (events: Events?, done: Done)] = [:]
        var nextID: Int64 = 1
    }

    public init(path: String, reactor: Reactor) {
        self.path = path
        self.reactor = reactor
        state = LoopOwned(State(), on: reactor)
    }

    /// Sends `request` (its `id` is replaced by the channel's) and calls `done` with the final
    /// answer, or with why batond could not be asked; `events` gets each event line before it.
    public func call(_ request: Request, events: Events? = nil, done: @escaping Done) {
        guard reactor.isCurrent else { return reactor.post { [self] in call(request, events: events, done: done) } }
        if state.access({ $0.fd }) < 0, let failure = connect() { return done(.failure(failure)) }
        var request = request
        let id = state.access { state -> Int64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        request.id = .number(id)
        guard let line = try? JSONEncoder().encode(request) else { return done(.failure(.unreachable("cannot encode the request"))) }
        state.access { state in
            state.pending[id] = (events, done)
            state.output.append(contentsOf: line)
            state.output.append(UInt8(ascii: "\n"))
        }
        flush()
    }

    /// Ends the connection; requests in flight fail.
    public func close() {
        guard reactor.isCurrent else { return reactor.post { [self] in close() } }
        lost(.unreachable("the dashboard closed its connection to batond"))
    }

    private func connect() -> ChannelError? {
        let fd: Int32
        do {
            fd = try UnixSocket.connect(path: path)
        } catch let SocketError.system(_, _, code) {
            return .unreachable("cannot reach batond at \(path): \(String(cString: strerror(code)))")
        } catch {
            return .unreachable("cannot reach batond at \(path): \(error)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        state.access { state in
            state.fd = fd
            state.splitter = FrameSplitter(limit: 64 << 20)
        }
        reactor.watch(fd, events: Epoll.input | Epoll.readHangUp) { [self] mask in ready(mask) }
        return nil
    }

    private func ready(_ mask: UInt32) {
        if mask & Epoll.output != 0 { flush() }
        if mask & (Epoll.input | Epoll.hangUp | Epoll.error | Epoll.readHangUp) != 0 { read() }
    }

    private func flush() {
        var (fd, output, sent) = state.access { state -> (Int32, [UInt8], Int) in
            defer { state.output = []; state.sent = 0 }
            return (state.fd, state.output, state.sent)
        }
        guard fd >= 0 else { return }
        while sent < output.count {
            let n = output.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, output.count - sent, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            return lost(.unreachable("lost batond at \(path): \(String(cString: strerror(errno)))"))
        }
        let waiting = sent < output.count
        let change = state.access { state -> Bool in
            if waiting { state.output = output; state.sent = sent }
            defer { state.watchingOut = waiting }
            return waiting != state.watchingOut
        }
        if change { reactor.modify(fd, events: Epoll.input | Epoll.readHangUp | (waiting ? Epoll.output : 0)) }
    }

    private func read() {
        // The loop's read buffer: reads happen on its thread only, one at a time (another
        // reactor in the process has its own).
        let buffer = reactor.readBuffer
        while true {
            let fd = state.access { $0.fd }
            guard fd >= 0 else { return }
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                let frames = state.access { $0.splitter.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) }
                for case let .line(bytes) in frames { deliver(bytes) }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            return lost(.unreachable(n == 0 ? "batond closed the connection" : "lost batond at \(path): \(String(cString: strerror(errno)))"))
        }
    }

    private func deliver(_ line: [UInt8]) {
        guard let response = try? JSONDecoder().decode(Response.self, from: Data(line)) else { return }
        // batond's last line before it restarts in place: what it took is answered; the rest was not taken.
        if response.restarting == true && response.id == nil { return lost(.restarting) }
        guard case let .number(id)? = response.id else { return }
        let handler = state.access { state -> (events: Events?, done: Done)? in
            guard let found = state.pending[id] else { return nil }
            if response.event == nil { state.pending[id] = nil }
            return found
        }
        guard let handler else { return }
        if response.event != nil { handler.events?(response, line) } else { handler.done(.success(response)) }
    }

    private func lost(_ error: ChannelError) {
        let (fd, pending) = state.access { state -> (Int32, [(events: Events?, done: Done)]) in
            defer { state.fd = -1; state.pending = [:]; state.output = []; state.sent = 0; state.watchingOut = false }
            return (state.fd, Array(state.pending.values))
        }
        if fd >= 0 {
            reactor.remove(fd)
            Glibc.close(fd)
        }
        for request in pending { request.done(.failure(error)) }
    }
}

/// Why a channel's request got no answer.
public enum ChannelError: Error, Sendable, Equatable {
    case unreachable(String)
    /// batond restarts in place (its `{"restarting":true}` line): a request it took was answered
    /// before, as far as it got; ask again, and the new batond answers.
    case restarting

    public var message: String {
        switch self {
        case let .unreachable(why): why
        case .restarting: "batond is restarting in place; ask again"
        }
    }
}
