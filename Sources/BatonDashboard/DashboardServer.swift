import BatonCore
import BatonIPC
import FoundationEssentials
import Glibc

/// `baton dashboard`'s web server: the `HTTPServer` of batond's own `/metrics`, on the event loop
/// — no thread per connection — with every request through the `Gate` before anything else looks
/// at it, the API asked of batond over one multiplexed `Channel`, and the event streams fed from
/// one `watch` (`Feed`).
public final class DashboardServer: Sendable {
    public struct Limits: Sendable {
        public var headBytes = 8_192
        public var maxFields = 48
        public var bodyBytes = 16_384
        public var maxConnections = 64
        public var maxStreams = 32
        /// Streams of runs' output open at once (each holds a connection to batond).
        public var maxOutputStreams = 16
        /// Raw output downloads at once, and the most bytes one holds (its answer has a length).
        public var maxDownloads = 2
        public var downloadBytes = 32 << 20
        /// How long an artifact download waits for its reader to take the bytes sent (then it is closed).
        public var downloadStall: Duration = .seconds(30)
        /// From accept to the last byte of an answer (an event stream's head).
        public var timeout: Duration = .seconds(10)
        /// A team's dashboard behind a proxy: more connections and pages, each person's page
        /// holding its event stream open through the proxy.
        public static var team: Limits {
            var limits = Limits()
            limits.maxConnections = 512
            limits.maxStreams = 384
            limits.maxOutputStreams = 64
            limits.maxDownloads = 4
            return limits
        }
        /// How often a quiet event stream gets a keepalive comment.
        public var keepalive: Duration = .seconds(15)
        public init() {}
    }

    public let address: ListenAddress
    public let gate: Gate
    /// The codes handed out and the sessions they were traded for: the loop's (a code the
    /// command's thread issues is handed to the loop, which redeems it).
    let sessions: LoopOwned<Sessions>
    /// Told of each sign-in and each code used twice, to say so where the dashboard was started.
    let onSignIn: @Sendable (SignIn) -> Void
    let limits: Limits
    let api: API
    let feed: Feed
    let http: HTTPServer
    let reactor: Reactor
    /// The open event streams, by the exchange that carries each (the loop's, as are the two below).
    let streams: LoopOwned<[ObjectIdentifier: Stream]>
    /// The open streams of runs' output.
    let outputStreams: LoopOwned<[ObjectIdentifier: HTTPExchange]>
    /// Raw output downloads being read.
    let downloads: LoopOwned<Int>
    /// The system's Chart.js, read once at start; nil where it is not installed (no charts).
    let chartLibrary: [UInt8]?
    /// The team's dashboard: the proxy whose user header is believed (nil: one user, one-time codes).
    let proxy: ProxyGate?
    /// The team's user map (`--user-map`), replaced on SIGHUP: the loop's, read there; the
    /// command's thread hands it a new one.
    let userMap: LoopOwned<UserMap?>
    /// Without a proxy: the machine's own addresses, read at start (a peer at one is on this machine).
    let machineAddresses: Set<String>

    public init(listening requested: ListenAddress, socketPath: String, limits: Limits = Limits(), proxy: ProxyGate? = nil, reactor: Reactor,
                onSignIn: @escaping @Sendable (SignIn) -> Void = { _ in }) throws(SocketError) {
        var httpLimits = HTTPServer.Limits()
        httpLimits.headBytes = limits.headBytes
        httpLimits.maxFields = limits.maxFields
        httpLimits.bodyBytes = limits.bodyBytes
        httpLimits.maxConnections = limits.maxConnections
        // Behind a proxy every page comes from the proxy: a peer's share (8, against a local user
        // holding every connection) would let 8 open pages fill the whole team's dashboard. A proxy
        // on this machine is an owner (no share, and the reserve: any other local user keeps its 8);
        // one on another host comes as the one "unknown" peer, whose share is then every connection
        // (its port must be reachable by the proxy alone: docs/security.md).
        if let proxy {
            httpLimits.owners.formUnion(proxy.proxyUsers)
            if proxy.proxyUsers.isEmpty { httpLimits.maxConnectionsPerPeer = limits.maxConnections }
        }
        httpLimits.timeout = limits.timeout
        // The handler finds the server on the loop, where it is put (before `serve` starts the HTTP server).
        let box = LoopOwned<DashboardServer?>(nil, on: reactor)
        http = try HTTPServer(listening: requested, limits: httpLimits, reactor: reactor) { head, exchange in
            box.access { $0 }?.handle(head, exchange)
        }
        address = http.address
        gate = Gate(address: address, bodyLimit: limits.bodyBytes)
        self.limits = limits
        self.proxy = proxy
        machineAddresses = proxy != nil ? [] : Set(ListenAddress(host: "0.0.0.0", port: 0).machineAddresses() + ListenAddress(host: "::", port: 0).machineAddresses())
        self.onSignIn = onSignIn
        self.reactor = reactor
        streams = LoopOwned([:], on: reactor)
        sessions = LoopOwned(Sessions(), on: reactor)
        userMap = LoopOwned(nil, on: reactor)
        outputStreams = LoopOwned([:], on: reactor)
        downloads = LoopOwned(0, on: reactor)
        chartLibrary = Assets.systemFile(Assets.chartLibraryPath)
        api = API(channel: Channel(path: socketPath, reactor: reactor), reactor: reactor)
        feed = Feed(socketPath: socketPath, reactor: reactor)
        reactor.post { box.access { $0 = self } }
    }

    /// Uses this user map from the next request on (at start, and on SIGHUP).
    public func use(_ map: UserMap?) {
        onLoopAndWait { [userMap] in userMap.access { $0 = map } }
    }

    /// Runs `body` on the loop (at once when called there) and waits for it: how the command's
    /// thread hands the loop a change, in force when this returns.
    func onLoopAndWait<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        if reactor.isCurrent { return body() }
        let done = OneShot<T>()
        reactor.post { done.set(body()) }
        return done.wait()
    }

    /// Serves on the event loop; the calling thread waits, forever.
    public func serve() -> Never {
        feed.onChange { [weak self] in self?.feedChanged() }
        feed.start()
        http.start()
        scheduleKeepalive()
        while true { sleep(3_600) }
    }

    /// One request's head, on the loop: the gate's decision, then the route's answer.
    func handle(_ head: HTTPRequestHead, _ exchange: HTTPExchange) {
        let headOnly = head.method == "HEAD"
        let user: String?
        switch whose(head, peer: exchange.peerAddress, peerUID: exchange.peerUID) {
        case let .refuse(status, reason): return exchange.answer(refusal(status, reason), headOnly: headOnly)
        case let .user(name): user = name
        case nil: user = nil
        }
        switch gate.decide(head, sessions: sessions.access { $0 }, proxied: proxy != nil) {
        case let .refuse(status, reason, allow):
            exchange.answer(refusal(status, reason, allow: allow), headOnly: headOnly)
        case .serve(.events):
            openStream(exchange, lastEventID: head.field("last-event-id"), user: user)
        case let .serve(.output(run)):
            openOutput(exchange, run: run, lastEventID: head.field("last-event-id"), user: user)
        case let .serve(.artifact(run, name)):
            sendArtifact(exchange, run: run, name: name, user: user)
        case let .serve(route) where route.changesState:
            let length = head.field("content-length").flatMap { Int($0) } ?? 0
            exchange.readBody(count: length) { [self] body in answer(route, head, body, user: user) { exchange.answer($0) } }
        case let .serve(route):
            answer(route, head, [], user: user) { exchange.answer($0, headOnly: headOnly) }
        }
    }

    /// The user a trusted proxy named (nil for today's one-user dashboard), or why the request is
    /// refused: behind a proxy, only its peers are served; without one, only this machine's
    /// peers, and the user field from no one (nothing believes it).
    func whose(_ head: HTTPRequestHead, peer: String?, peerUID: UInt32?) -> ProxyGate.Decision? {
        if let proxy { return proxy.decide(head, peer: peer, peerUID: peerUID, map: userMap.access { $0 }) }
        return ProxyGate.unproxied(head, peer: peer, machine: machineAddresses)
    }

    func answer(_ route: Route, _ head: HTTPRequestHead, _ body: [UInt8], user: String?, _ done: @escaping @Sendable (HTTPResponse) -> Void) {
        let api = self.api.acting(user)
        switch route {
        case .page: done(Assets.file("index.html")!)
        case let .asset(name): done(Assets.file(name) ?? refusal(404, "no such file"))
        case .status: api.status(done)
        case .history: api.history(query: head.query ?? "", done)
        case .search: api.search(query: head.query ?? "", done)
        case .stats: api.stats(query: head.query ?? "", done)
        case .chartLibrary: done(chartLibrary.map { Assets.script($0) } ?? refusal(404, "charts need Chart.js: install the libjs-chart.js package"))
        case let .run(id): api.run(id, done)
        case .trigger: api.trigger(body: body, done)
        case .cancel: api.cancel(body: body, done)
        case .approval: api.approval(body: body, done)
        case .approvals: api.approvals(done)
        case .session: done(proxy == nil ? signIn(body: body) : refusal(404, "this dashboard signs in through its proxy"))
        case let .rawOutput(id): download(id, api, done)
        case let .artifacts(id): api.artifacts(id, done)
        case .events, .output, .artifact: done(refusal(500, "streams are not answered here"))
        }
    }

    /// A raw output download, when a slot is free (each holds up to `downloadBytes`).
    func download(_ id: Int64, _ api: API, _ done: @escaping @Sendable (HTTPResponse) -> Void) {
        guard admitDownload() else { return done(refusal(503, "another download of output is being read; try again in a moment")) }
        api.rawOutput(id, limit: limits.downloadBytes) { [self] response in
            downloads.access { $0 -= 1 }
            done(response)
        }
    }

    /// Takes a download slot (raw output's and artifacts' alike) when one is free, on the loop.
    func admitDownload() -> Bool {
        downloads.access { count -> Bool in
            guard count < limits.maxDownloads else { return false }
            count += 1
            return true
        }
    }

    func refusal(_ status: Int, _ reason: String, allow: String? = nil) -> HTTPResponse {
        HTTPResponse.refusal(status, reason, extraFields: Assets.securityFields + (allow.map { [.init(name: "Allow", value: $0)] } ?? []))
    }
}
