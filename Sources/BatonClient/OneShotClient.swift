import BatonCore
import BatonIPC
import FoundationEssentials
import Glibc

/// A client of batond that asks one question at a time on the calling thread: connect, write the
/// request, read lines until its final answer. No thread, no queue, no task, where `BatonClient`
/// starts a reader thread, a writer queue and Swift's cooperative pool: a command that asks one
/// question and prints the answer (`baton status`, `show`, `history`) is done before those would
/// have started. Streams (a run's updates, `watch`, output followed) need `BatonClient`.
///
/// Its errors are `BatonClient`'s, with the same messages: `.forbidden` or `.unavailable` naming
/// the path when batond cannot be reached, `.unavailable` when the connection ends before the
/// answer, batond's refusals as their cases. Not `Sendable`: one caller owns it.
public final class OneShotClient {
    /// Where the client connected (the socket's path), for messages.
    public let socket: String
    private var lines: SocketLines
    private var nextID: Int64 = 1

    /// Connects to batond's socket: `socket`, else where the `baton` CLI looks (`SocketPath.search`).
    public convenience init(socket: String? = nil) throws(BatonClientError) {
        try self.init(socket: socket, stop: nil)
    }

    /// Connects as `init(socket:)`; a read gives up once `stop` is readable (`StopSignal`): the
    /// connection then ends as if batond had closed it, whoever gave the signal.
    convenience init(socket: String?, stop: Int32?) throws(BatonClientError) {
        let path = socket ?? SocketPath.search()
        self.init(fd: try SocketTransport.connect(path: path), name: path, stop: stop)
    }

    /// A client on a connected, blocking stream socket, which it closes; `name` is for messages.
    init(fd: Int32, name: String, stop: Int32? = nil) {
        socket = name
        lines = SocketLines(fd: fd, path: name, stop: stop)
    }

    deinit { close(lines.fd) }

    /// Asks `query` and reads its answer.
    public func ask<Value>(_ query: BatonQuery<Value>) throws -> Value {
        var pages: [Response] = []
        let final = try call(query.request) { event in
            if query.isPage(event) { pages.append(event) }
        }
        return try query.read(BatonQuery<Value>.gathered(final, pages))
    }

    /// Sends `request` (with the next id) and reads until its final answer, handing its event
    /// lines to `events` and passing over lines of other ids. A failed answer throws its `BatonClientError`.
    func call(_ request: Request, events: (Response) -> Void = { _ in }) throws -> Response {
        let id = nextID
        nextID += 1
        var request = request
        request.id = .number(id)
        guard let line = Connection.line(request) else { throw BatonClientError.internal("cannot encode the \(request.op.rawValue) request") }
        send(line)
        var seen = false
        while true {
            let line: [UInt8]
            do throws(SocketLines.End) {
                line = try lines.next()
            } catch {
                throw BatonClientError.unavailable(error.reason)
            }
            guard let response = FastResponse.read(line) ?? (try? JSONDecoder().decode(Response.self, from: Data(line))) else {
                shutdown(lines.fd, Int32(SHUT_RDWR))
                throw BatonClientError.unavailable(SocketLines.unreadable(line))
            }
            // A refusal without an id is batond's answer to the connection itself (a connection
            // limit reached): it closes next, and its line says why better than the close would.
            if response.refusesConnection { return try BatonClient.answer(.success(response)) }
            // batond restarts in place: the request was taken if batond sent a line for it.
            if response.restarting == true && response.id == nil {
                throw seen ? BatonClientError.unavailable(Multiplexer<Sink>.restartedReason) : BatonClientError.restarting(BatonClientError.notTaken)
            }
            guard case .number(id)? = response.id else { continue }
            guard response.ok != nil else {
                seen = true
                events(response)
                continue
            }
            return try BatonClient.answer(.success(response))
        }
    }

    /// Writes the whole line. A write that fails ends the connection, as `SocketTransport`'s does:
    /// the read that follows sees the end and says it.
    private func send(_ line: [UInt8]) {
        var sent = 0
        while sent < line.count {
            let n = line.withUnsafeBytes { Glibc.send(lines.fd, $0.baseAddress! + sent, line.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { shutdown(lines.fd, Int32(SHUT_RDWR)); return }
            sent += n
        }
    }
}
