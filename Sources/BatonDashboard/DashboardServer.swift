import BatonCore
import BatonIPC
import CBatonSystem
import Foundation
import Synchronization

/// `baton dashboard`'s web server: HTTP/1.1, one request per connection, a thread per
/// connection (at most `maxConnections`, event streams included), every read and write bounded
/// by a deadline, every request through the `Gate` before anything else looks at it.
public final class DashboardServer: @unchecked Sendable {
    public struct Limits: Sendable {
        public var headBytes = 8_192
        public var maxFields = 48
        public var bodyBytes = 16_384
        public var maxConnections = 64
        public var maxStreams = 32
        /// From accept to the last byte of an answer (an event stream's head and each of its writes).
        public var timeout: Duration = .seconds(10)
        /// How often a quiet event stream gets a keepalive comment.
        public var keepalive: Duration = .seconds(15)
        public init() {}
    }

    public let address: ListenAddress
    public let gate: Gate
    /// The codes handed out and the sessions they were traded for.
    let sessions = Mutex(Sessions())
    /// Told of each sign-in and each code used twice, to say so where the dashboard was started.
    let onSignIn: @Sendable (SignIn) -> Void
    let limits: Limits
    let api: API
    let feed: Feed
    private let listenFD: Int32
    private let connections = Atomic<Int>(0)
    let streams = Atomic<Int>(0)

    public init(listening requested: ListenAddress, socketPath: String, limits: Limits = Limits(),
                onSignIn: @escaping @Sendable (SignIn) -> Void = { _ in }) throws(SocketError) {
        var port: UInt16 = 0
        let fd = baton_tcp_listen(requested.host, requested.port, 64, &port)
        guard fd >= 0 else { throw .system("listen", path: requested.description, errno: -fd) }
        listenFD = fd
        address = ListenAddress(host: requested.host, port: port)
        gate = Gate(address: address, bodyLimit: limits.bodyBytes)
        self.limits = limits
        self.onSignIn = onSignIn
        let link = BatondLink(socketPath: socketPath)
        api = API(link: link)
        feed = Feed(link: link)
    }

    /// Serves on the calling thread, forever.
    public func serve() -> Never {
        feed.start()
        while true {
            var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, -1) > 0 else { continue }
            while case let fd = baton_accept(listenFD), fd >= 0 {
                guard connections.add(1, ordering: .relaxed).newValue <= limits.maxConnections else {
                    connections.subtract(1, ordering: .relaxed)
                    let wire = HTTPWire(fd: fd, deadline: .now + .milliseconds(100))
                    wire.send(HTTPResponse.refusal(503, "too many connections").bytes(headOnly: false))
                    close(fd)
                    continue
                }
                let thread = Thread { [self] in
                    handle(fd)
                    close(fd)
                    connections.subtract(1, ordering: .relaxed)
                }
                thread.stackSize = 512 << 10
                thread.start()
            }
        }
    }

    private func handle(_ fd: Int32) {
        let wire = HTTPWire(fd: fd, deadline: .now + limits.timeout)
        let (read, rest) = wire.readHead(limit: limits.headBytes, maxFields: limits.maxFields)
        switch read {
        case .gone: return
        case let .refused(status, reason): wire.send(refusal(status, reason).bytes(headOnly: false))
        case let .request(head, _):
            switch gate.decide(head, sessions: sessions.withLock { $0 }) {
            case let .refuse(status, reason, allow):
                wire.send(refusal(status, reason, allow: allow).bytes(headOnly: head.method == "HEAD"))
            case .serve(.events):
                stream(wire, lastEventID: head.field("last-event-id"))
            case let .serve(route):
                var body: [UInt8] = []
                if route.changesState {
                    let length = head.field("content-length").flatMap { Int($0) } ?? 0
                    guard let read = wire.readBody(count: length, have: rest) else {
                        wire.send(refusal(408, "the body took too long").bytes(headOnly: false))
                        return
                    }
                    body = read
                }
                wire.send(answer(route, head, body).bytes(headOnly: head.method == "HEAD"))
            }
        }
    }

    func answer(_ route: Route, _ head: HTTPRequestHead, _ body: [UInt8]) -> HTTPResponse {
        switch route {
        case .page: Assets.file("index.html")!
        case let .asset(name): Assets.file(name) ?? refusal(404, "no such file")
        case .status: api.status()
        case .history: api.history(query: head.query ?? "")
        case let .run(id): api.run(id)
        case .trigger: api.trigger(body: body)
        case .cancel: api.cancel(body: body)
        case .session: signIn(body: body)
        case .events: refusal(500, "streams are not answered here")
        }
    }

    func refusal(_ status: Int, _ reason: String, allow: String? = nil) -> HTTPResponse {
        HTTPResponse.refusal(status, reason, extraFields: Assets.securityFields + (allow.map { [.init(name: "Allow", value: $0)] } ?? []))
    }
}
