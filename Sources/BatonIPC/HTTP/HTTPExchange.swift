import BatonCore
import Glibc

/// One request on an `HTTPServer` connection: answered once, or turned into an event stream.
public final class HTTPExchange: Sendable {
    let server: HTTPServer
    let connection: ServerConnection
    /// The loop's, with no lock: what is called from another thread is posted there first.
    private let state: LoopOwned<State>

    struct State {
        var bodyStart: Int
        var wantBody: (count: Int, then: @Sendable ([UInt8]) -> Void)?
        var answered = false
        var streaming = false
        var onClose: (@Sendable () -> Void)?
    }

    init(server: HTTPServer, connection: ServerConnection, bodyStart: Int) {
        self.server = server
        self.connection = connection
        state = LoopOwned(State(bodyStart: bodyStart), on: connection.reactor)
    }

    /// Reads `count` bytes of body (bounded by the server's body limit: 413 past it; 408 when it
    /// does not come before the deadline), then calls `then` with them, on the loop.
    public func readBody(count: Int, _ then: @escaping @Sendable ([UInt8]) -> Void) {
        guard connection.reactor.isCurrent else { return connection.reactor.post { [self] in readBody(count: count, then) } }
        guard count <= server.limits.bodyBytes else {
            return answer(.refusal(413, "the body is larger than \(server.limits.bodyBytes) bytes"))
        }
        state.access { $0.wantBody = (count, then) }
        received(connection.withInput { $0.input })
    }

    /// More input came (or the head's leftovers): a body that is complete goes to its reader.
    func received(_ input: [UInt8]) {
        let ready = state.access { state -> (@Sendable ([UInt8]) -> Void, [UInt8])? in
            guard let want = state.wantBody, input.count - state.bodyStart >= want.count else { return nil }
            state.wantBody = nil
            return (want.then, Array(input[state.bodyStart..<(state.bodyStart + want.count)]))
        }
        if let (then, body) = ready {
            server.requestIn(connection)
            then(body)
        }
    }

    /// After the handler saw the head: a request whose body nobody reads is all in.
    func requestInIfNoBody() {
        if state.access({ $0.wantBody == nil && !$0.streaming }) { server.requestIn(connection) }
    }

    /// Sends the answer (from any thread) and closes once it is written; a second answer is ignored.
    public func answer(_ response: HTTPResponse, headOnly: Bool = false) {
        guard connection.reactor.isCurrent else { return connection.reactor.post { [self] in answer(response, headOnly: headOnly) } }
        guard state.access({ state in defer { state.answered = true }; return !state.answered }) else { return }
        connection.write(response.bytes(headOnly: headOnly))
        connection.closeWhenWritten()
    }

    /// Turns the exchange into a stream: `head` goes out now, then each `send`; there is no
    /// deadline from now on, and a reader that lets `streamBuffer` bytes wait is dropped.
    public func stream(head: String, onClose: @escaping @Sendable () -> Void) {
        guard connection.reactor.isCurrent else { return connection.reactor.post { [self] in stream(head: head, onClose: onClose) } }
        guard state.access({ state in
            defer { state.answered = true; state.streaming = true; state.onClose = onClose }
            return !state.answered
        }) else { return }
        connection.markStreaming()
        connection.withInput { $0.deadline = nil }
        connection.write(Array(head.utf8))
    }

    /// Writes more of a stream (from any thread).
    public func send(_ text: String) { connection.write(Array(text.utf8)) }

    /// Writes more of a stream's bytes (from any thread).
    public func send(bytes: [UInt8]) { connection.write(bytes) }

    /// Calls `body` on the loop once at most `bytes` of what was sent wait to be written, or the
    /// connection has closed: a stream of a file sends its next piece then, never past `streamBuffer`.
    public func whenDrained(below bytes: Int, _ body: @escaping @Sendable () -> Void) { connection.whenDrained(below: bytes, body) }

    /// Ends a stream once what was sent is written (from any thread).
    public func end() { connection.closeWhenWritten() }

    /// Whether the connection is still there.
    public var isOpen: Bool { !connection.isClosed }

    /// Moves the exchange's deadline to `duration` from now (a handler that has read the whole
    /// request and waits for an outcome it promised, such as a webhook's `?wait=`). The head and
    /// body stay bounded by the server's own timeout: call this only once they are in.
    public func extendDeadline(by duration: Duration) {
        guard connection.reactor.isCurrent else { return connection.reactor.post { [self] in extendDeadline(by: duration) } }
        connection.withInput { $0.deadline = .now + duration }
    }

    /// The numeric address of the peer (`203.0.113.7`, `::1`); nil when the socket cannot say.
    public var peerAddress: String? { TCPPeer.address(of: connection.fd) }

    /// The uid that owns the peer's socket, found at accept; nil for a peer on another host.
    public var peerUID: UInt32? {
        if case let .uid(uid) = server.peer(of: connection) { return uid }
        return nil
    }

    /// Ends the exchange now, answered or not.
    public func close() { connection.close() }

    /// Calls `body` once, on the loop, when the connection closes (at once if it has): a handler
    /// that holds something for the client (a `?wait=`) lets it go when the client goes.
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        guard connection.reactor.isCurrent else { return connection.reactor.post { [self] in onClose(body) } }
        state.access { state in
            if let previous = state.onClose {
                state.onClose = { @Sendable in previous(); body() }
            } else {
                state.onClose = body
            }
        }
        if connection.isClosed { closed() }
    }

    func closed() {
        let onClose = state.access { state in defer { state.onClose = nil }; return state.onClose }
        onClose?()
    }
}
