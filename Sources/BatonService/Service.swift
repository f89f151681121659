import BatonCore
import FoundationEssentials

/// batond's request logic: who may do what, and each operation of the protocol, against the
/// conductor and the history. It decodes each request line the server hands it, answers with
/// one response line (after update events, for waits and watches), and maps every error to its
/// wire code in one place (`WireError.init(BatonError)`).
public final class Service: RequestHandler, Sendable {
    /// What the daemon does for `reload` and `prune`, which reach beyond the conductor.
    public struct Hooks: Sendable {
        /// Reads the config again and installs it in the service given; says what it warned of, or
        /// why it refused the config.
        public var reload: @Sendable (Service) async -> ReloadOutcome
        /// Applies retention now (or only counts, dry).
        public var prune: @Sendable (_ dryRun: Bool) async throws(BatonError) -> PruneReport
        /// How many client connections are open (for the metrics).
        public var connections: @Sendable () -> Int
        /// Asks for a restart in place (batond's SIGUSR2): nil once asked, else why it cannot be
        /// (in process; a fleet host; the executable gone).
        public var restart: @Sendable () -> String?

        public init(reload: @escaping @Sendable (Service) async -> ReloadOutcome,
                    prune: @escaping @Sendable (_ dryRun: Bool) async throws(BatonError) -> PruneReport,
                    connections: @escaping @Sendable () -> Int = { 0 },
                    restart: @escaping @Sendable () -> String? = { "this batond cannot restart in place" }) {
            self.reload = reload
            self.prune = prune
            self.connections = connections
            self.restart = restart
        }
    }

    let conductor: Conductor
    /// Where triggers, cancels and waits go: the conductor, or the fleet's coordinator.
    let dispatcher: any RunDispatcher
    let history: any HistoryReader
    /// Where refused requests are recorded.
    let journal: any RunStore
    let hooks: Hooks
    /// The actions and access rules in force: the loop's, replaced there by a reload (`install`
    /// posts the new one); a request taken on the loop carries the one it was taken with.
    private let current: LoopOwned<Generation>
    /// Where a peer's groups are looked up in the user database (NSS may block: never on the
    /// loop), one at a time, so that a connection's requests waiting for them keep their order.
    let lookups = SpawnerPool(threads: 1, name: "baton-lookup")
    /// Groups and user name per uid from the user database, with when they were read.
    let groupCache = Locked<[UInt32: KnownUser]>([:])
    /// The user database's name of a uid (NSS may block: asked on the lookup thread only).
    let userName: @Sendable (UInt32) -> String?
    /// The account a request's `as` names, with its groups (asked on the lookup thread only).
    let accounts: @Sendable (String) -> ActingUser?
    /// The accounts `as` named, with when they were read, kept `groupsKept` (a team's dashboard
    /// asks as the same few users over and over): the loop's (read as a request is taken, written
    /// where the lookup's answer is posted back).
    let actingCache: LoopOwned<[String: (user: ActingUser?, at: ContinuousClock.Instant)]>
    /// How long a user's groups and an `as` account are kept (`groupsKept`; tests that are about
    /// the cache keep them longer than a loaded machine can take between two requests).
    let kept: Duration
    /// Watches per connection (the conductor's observer ids), stopped when it closes: the loop's.
    private let watches: LoopOwned<[ObjectIdentifier: [Int]]>
    /// Output follows per connection (the dispatcher's ids), stopped when it closes: the loop's.
    let outputFollows: LoopOwned<[ObjectIdentifier: [Int]]>
    /// Per connection with a request waiting for its peer's groups: the requests that came after
    /// it, in order, taken once it is served (the loop's). A connection's answers keep their order
    /// even when another connection's lookup fills the cache meanwhile.
    let behindLookup: LoopOwned<[ObjectIdentifier: [RequestFrame]]>
    /// The loop requests come in on and answers are completed on.
    let reactor: Reactor
    /// The runs' snapshots as the loop last wrote them, for the next line that carries the same.
    let rendered: RenderedRuns

    /// Where the requests that wait on the history or a hook are driven, their answers coming back on the loop.
    public let reads: ReadDriver

    /// What batond counts for `metrics` and `GET /metrics`: triggers here, runs and commits by batond.
    public let metrics: Metrics
    /// How runs' processes are kept track of, for `status`.
    let processTree: String?

    public init(conductor: Conductor, dispatcher: (any RunDispatcher)? = nil, history: any HistoryReader, journal: any RunStore,
                generation: Generation, hooks: Hooks, metrics: Metrics = Metrics(), processTree: String? = nil, reactor: Reactor,
                userName: @escaping @Sendable (UInt32) -> String? = UserDatabase.userName,
                accounts: @escaping @Sendable (String) -> ActingUser? = ActingUser.lookUp, kept: Duration = Service.groupsKept) {
        self.kept = kept
        self.userName = userName
        self.accounts = accounts
        self.metrics = metrics
        reads = ReadDriver(reactor: reactor)
        self.reactor = reactor
        rendered = RenderedRuns(reactor: reactor)
        watches = LoopOwned([:], on: reactor)
        outputFollows = LoopOwned([:], on: reactor)
        behindLookup = LoopOwned([:], on: reactor)
        actingCache = LoopOwned([:], on: reactor)
        self.processTree = processTree
        self.conductor = conductor
        self.dispatcher = dispatcher ?? conductor
        self.history = history
        self.journal = journal
        self.hooks = hooks
        current = LoopOwned(generation, on: reactor)
        // Root and batond's own user never wait for a lookup: their names are read once, here
        // (at start, before the loop serves anyone), for what a pause records and messages say.
        for uid in Set([0, generation.owner]) {
            if let name = userName(uid) { groupCache.withLock { $0[uid] = KnownUser(groups: [], name: name, at: .now) } }
        }
    }

    /// The actions and rules requests are served against now (on the loop).
    public var generation: Generation { current.access { $0 } }

    /// Puts a new generation in force (reload), on the loop: requests it takes after are served
    /// against it; those already taken finish with the one they started with (a trigger runs the
    /// definition it was checked against). Posted from elsewhere, in order with what that thread
    /// posts next (a reload's answer follows its install).
    public func install(_ generation: Generation) {
        update { $0 = generation }
    }

    /// Changes the generation in force on the loop; `installed` is called there once it is.
    public func update(_ change: @escaping @Sendable (inout Generation) -> Void, installed: (@Sendable () -> Void)? = nil) {
        reactor.onLoop { [self] in
            let generation = current.access { generation in
                change(&generation)
                return generation
            }
            conductor.replaceActions(Array(generation.actions.values))
            installed?()
        }
    }

    // MARK: RequestHandler

    /// A request line from a caller (on the loop): answered through it, now or once its outcome is known.
    public func received(_ frame: RequestFrame, from connection: any Caller) {
        let key = ObjectIdentifier(connection)
        // Behind a request that waits for its peer's groups: waits too, whatever it is.
        if behindLookup.access({ $0[key] != nil }) { return behindLookup.access { $0[key]?.append(frame) } }
        take(frame, from: connection)
    }

    /// Takes one request line: answered or served now, or, when its peer's groups must be looked
    /// up first (off the loop), served once they are back; true then, and the connection's next
    /// requests wait behind it.
    @discardableResult
    private func take(_ frame: RequestFrame, from connection: any Caller) -> Bool {
        let request: Request
        switch Self.request(in: frame) {
        case let .success(valid): request = valid
        case let .failure(refusal):
            send(.failure(refusal.id, WireError(refusal.error)), to: connection)
            connection.endRequest()
            return false
        }
        let generation = self.generation
        if request.actingAs != nil { return actFor(request, connection, generation) }
        let exchange = Exchange(request: request, connection: connection)
        guard !needsGroupLookup(exchange.peer, generation) else {
            let key = ObjectIdentifier(connection)
            behindLookup.access { $0[key] = $0[key] ?? [] }
            lookUpGroups(of: exchange.peer) { [self] in
                serve(request, exchange, generation, connection)
                takeWaiting(from: connection)
            }
            return true
        }
        serve(request, exchange, generation, connection)
        return false
    }

    /// After a lookup: the connection's requests that came behind it, in order, until one waits
    /// for a lookup of its own (or none is left, or the connection has closed).
    func takeWaiting(from connection: any Caller) {
        let key = ObjectIdentifier(connection)
        while let next = behindLookup.access({ queue -> RequestFrame? in
            guard let waiting = queue[key], let first = waiting.first else {
                queue[key] = nil
                return nil
            }
            queue[key] = Array(waiting.dropFirst())
            return first
        }) {
            if take(next, from: connection) { return }
        }
    }

    /// Serves a valid request (on the loop) against `generation`.
    func serve(_ request: Request, _ exchange: Exchange, _ generation: Generation, _ connection: any Caller) {
        switch request.op {
        // Answered here, on the server's thread: nothing to wait for.
        case .ping: exchange.finish(ping(request))
        case .status: exchange.finish(status(request, generation, connection))
        case .actions: exchange.finish(actions(request, generation, connection))
        case .metrics: exchange.finish(metrics(request, generation, exchange.peer))
        // Answered from whichever thread learns the outcome: no task, no hop.
        case .trigger: trigger(exchange, generation)
        case .wait: wait(exchange, generation)
        case .cancel: cancel(exchange, generation)
        case .watch:
            if let id = watch(exchange) {
                watches.access { $0[Self.key(of: connection), default: []].append(id) }
                // Closed before the watch was registered: stop it now.
                if connection.isClosed { closed(connection) }
            }
        case .output: output(exchange, generation)
        case .pause, .resume: pause(exchange, generation)
        case .approve, .deny: approval(exchange, generation)
        case .approvals: approvals(request, exchange, generation)
        // The history and the admin hooks: driven by `reads`, answered on the loop.
        case .history, .show, .stats, .denied, .reload, .prune, .search, .events, .artifacts, .artifact, .restart:
            reads.read({ [self] () async throws(BatonError) -> Response in try await handle(request, generation, connection) }) { result in
                switch result {
                case let .success(response): exchange.finish(response)
                case let .failure(error): exchange.fail(error)
                }
            }
        }
    }

    /// The caller has gone (on the loop): its watches and output follows stop.
    public func closed(_ connection: any Caller) {
        behindLookup.access { $0[Self.key(of: connection)] = nil }
        let ids = watches.access { $0.removeValue(forKey: Self.key(of: connection)) } ?? []
        for id in ids { conductor.stopObserving(id) }
        let follows = outputFollows.access { $0.removeValue(forKey: Self.key(of: connection)) } ?? []
        for id in follows { dispatcher.stopFollowingOutput(id) }
    }

    /// Answers a request that reads the history or calls a hook. Each operation has its own
    /// function, so that a waiting request keeps only that function's frame alive.
    private func handle(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        switch request.op {
        case .history: return try await history(request, generation, connection)
        case .show: return try await show(request, generation, connection)
        case .reload: return try await reload(request, generation, connection)
        case .prune: return try await prune(request, generation, connection)
        case .stats: return try await stats(request, generation, connection)
        case .denied: return try await denied(request, generation, connection)
        case .search: return try await search(request, generation, connection)
        case .events: return try await events(request, generation, connection)
        case .artifacts: return try await artifacts(request, generation, connection)
        case .artifact: return try await artifact(request, generation, connection)
        case .restart: return try await restart(request, generation, connection)
        case .ping, .status, .actions, .trigger, .wait, .cancel, .watch, .metrics, .output, .pause, .resume, .approve, .deny, .approvals:
            throw .internalError("\(request.op.rawValue) is not answered by the read driver")
        }
    }

    /// Why a frame holds no request to serve, with the id to echo when one could be read.
    struct Refusal: Error {
        var id: RequestID?
        var error: BatonError
    }

    /// The request a frame holds, decoded, with no key given twice in one object, and within its
    /// bounds (`Request.validated`): the one place where a line becomes a request, before anything
    /// is looked up for it.
    static func request(in frame: RequestFrame) -> Result<Request, Refusal> {
        guard case let .line(bytes) = frame else {
            return .failure(Refusal(error: .badRequest("request line longer than 1 MiB")))
        }
        // The common lines in one pass; anything it is not sure of goes the reference way.
        let fast = FastRequest.read(bytes)
        let decoded: Request
        if let fast {
            decoded = fast
        } else {
            // Foundation's decoder lets a malformed number pass in a field it ignores (`2e-`).
            if let number = JSONNumbers.firstMalformed(in: bytes) {
                return .failure(Refusal(id: salvageID(bytes), error: .badRequest(RequestDecoding.notANumber(number))))
            }
            do {
                decoded = try decoder.decode(Request.self, from: Data(bytes))
            } catch {
                return .failure(Refusal(id: salvageID(bytes), error: .badRequest(RequestDecoding.describe(error))))
            }
        }
        let request: Request
        do throws(BatonError) {
            request = try decoded.validated()
        } catch {
            return .failure(Refusal(id: decoded.id, error: error))
        }
        // The decoder kept the first of a key given twice; the sender may have meant the other.
        // After the caps: a line past them is refused without scanning it. (The fast reader
        // answers only for lines without one.)
        if fast == nil, let path = DuplicateKeys.find(in: bytes).first {
            return .failure(Refusal(id: decoded.id, error: .badRequest(RequestDecoding.givenTwice(path))))
        }
        return .success(request)
    }

    // MARK: Sending

    static let decoder = JSONDecoder()

    func send(_ response: Response, to connection: any Caller) {
        connection.send(response.jsonLine())
    }

    /// The id of a request that failed to decode, when its text still has one, so the error can echo it.
    static func salvageID(_ bytes: [UInt8]) -> RequestID? {
        struct OnlyID: Decodable { var id: RequestID? }
        return (try? decoder.decode(OnlyID.self, from: Data(bytes)))?.id
    }
}
