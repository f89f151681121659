import BatonCore
import BatonStore
import Foundation

/// Answers requests from the socket: decodes each line, calls the conductor or the store,
/// and sends the answer (and, for waits and watches, the updates before it).
public final class RequestHandler: ServerDelegate {
    let conductor: Conductor
    let store: Store
    /// Called for `reload`; returns an error message when the new config is refused.
    let reload: @Sendable () async -> String?
    /// Called for `prune`: applies retention now (or counts, dry).
    let prune: @Sendable (_ dryRun: Bool) async throws -> PruneReport
    /// The access rules in force (they change with a reload).
    let access: @Sendable () -> AccessPolicy
    /// The daemon's own user, who (like root) may always act.
    let owner: UInt32
    /// Groups per uid from the user database, with when they were read.
    private let groupCache = Locked<[UInt32: (groups: [UInt32], at: ContinuousClock.Instant)]>([:])
    /// Watches per connection, cancelled when it closes; guarded by the mutex.
    private let watches = Locked<[ObjectIdentifier: [Task<Void, Never>]]>([:])

    public init(conductor: Conductor, store: Store, reload: @escaping @Sendable () async -> String?,
                prune: @escaping @Sendable (_ dryRun: Bool) async throws -> PruneReport,
                access: @escaping @Sendable () -> AccessPolicy = { AccessPolicy(trigger: .anyone, cancel: .anyone) },
                owner: UInt32 = geteuid()) {
        self.conductor = conductor
        self.store = store
        self.reload = reload
        self.prune = prune
        self.access = access
        self.owner = owner
    }

    // MARK: Access

    /// Whether the peer may do `permission` on the action named (or globally).
    private func allowed(_ permission: Permission, _ actionName: String?, _ peer: Peer) async -> Bool {
        // Root and the owner skip the group lookup (AccessPolicy would admit them anyway).
        if peer.uid == 0 || peer.uid == owner { return true }
        let action: Action? = if let actionName { await conductor.action(named: actionName) } else { nil }
        return access().allows(permission, action: action, uid: peer.uid, groups: groups(of: peer), owner: owner)
    }

    /// The peer's groups: its gid from SO_PEERCRED (never cached: it is this connection's), plus
    /// the user database's groups of its uid, kept 10 s per uid so that a busy client does not
    /// make every request read /etc/group (a membership change applies within 10 s).
    private func groups(of peer: Peer) -> [UInt32] {
        let now = ContinuousClock.now
        let known: [UInt32]
        if let cached = groupCache.withLock({ $0[peer.uid] }), now - cached.at < .seconds(10) {
            known = cached.groups
        } else {
            known = peer.databaseGroups
            groupCache.withLock { cache in
                if cache.count > 10_000 { cache.removeAll() }
                cache[peer.uid] = (known, now)
            }
        }
        return known.contains(peer.gid) ? known : known + [peer.gid]
    }

    /// Throws `forbidden` naming the permission unless the peer holds it; a refused trigger or
    /// cancel is recorded (who, what, when), so `baton history --denied` lists it.
    private func require(_ permission: Permission, _ actionName: String?, _ request: Request, _ peer: Peer) async throws {
        guard await !allowed(permission, actionName, peer) else { return }
        let what = actionName.map { "\(permission.rawValue) \($0)" } ?? permission.rawValue
        if permission == .trigger || permission == .cancel || permission == .admin {
            let record = TriggerRecord(runID: request.run, action: actionName ?? "", key: request.key ?? "",
                                       decision: "denied \(permission.rawValue)", policy: request.policy ?? .reject,
                                       peer: peer, at: .now, params: request.params ?? [:])
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                store.enqueue([.trigger(record)]) { _ in done.resume() }
            }
        }
        throw BatonError.forbidden("\(peer.described) may not \(what)")
    }

    /// The names among `names` whose runs the peer may read.
    private func readable(_ names: [String], _ peer: Peer) async -> Set<String> {
        var result: Set<String> = []
        for name in Set(names) where await allowed(.read, name, peer) { result.insert(name) }
        return result
    }

    public func received(_ frame: FrameSplitter.Frame, on connection: ServerConnection) {
        guard case let .line(bytes) = frame else {
            send(.failure(nil, WireError(code: "bad_request", message: "request line longer than 1 MiB")), to: connection)
            connection.endRequest()
            return
        }
        let request: Request
        do {
            request = try Self.decoder.decode(Request.self, from: Data(bytes))
        } catch {
            send(.failure(Self.salvageID(bytes), WireError(code: "bad_request", message: Self.describe(error))), to: connection)
            connection.endRequest()
            return
        }
        if request.op == .watch {
            let task = Task {
                await self.watch(request, connection)
                connection.endRequest()
            }
            watches.withLock { $0[ObjectIdentifier(connection), default: []].append(task) }
            return
        }
        Task {
            defer { connection.endRequest() }
            do {
                try await handle(request, connection)
            } catch let error as BatonError {
                send(.failure(request.id, WireError(error)), to: connection)
            } catch let error as WireError {
                send(.failure(request.id, error), to: connection)
            } catch {
                send(.failure(request.id, WireError(code: "internal", message: "\(error)")), to: connection)
            }
        }
    }

    public func closed(_ connection: ServerConnection) {
        let tasks = watches.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) } ?? []
        for task in tasks { task.cancel() }
    }

    /// Answers one request. Each operation has its own function, so that a request waiting for a
    /// run keeps only that function's frame alive (a single function with every case in it kept
    /// all their locals in every waiting task: ~30 KiB per waiting client).
    private func handle(_ request: Request, _ connection: ServerConnection) async throws {
        let response: Response
        switch request.op {
        case .ping: response = ping(request)
        case .trigger: response = try await trigger(request, connection)
        case .wait: response = try await wait(request, connection)
        case .status: response = await status(request, connection)
        case .actions: response = await actions(request, connection)
        case .history: response = try await history(request, connection)
        case .show: response = try await show(request, connection)
        case .cancel: response = try await cancel(request, connection)
        case .reload: response = try await reload(request, connection)
        case .prune: response = try await prune(request, connection)
        case .stats: response = try await stats(request, connection)
        case .denied: response = try await denied(request, connection)
        case .watch: return
        }
        send(response, to: connection)
    }

    private func ping(_ request: Request) -> Response {
        var response = Response(id: request.id)
        response.version = BatonVersion.current
        response.pid = getpid()
        return response
    }

    private func trigger(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        guard let action = request.action else { throw WireError(code: "bad_request", message: "trigger needs \"action\"") }
        try await require(.trigger, action, request, connection.peer)
        let ticket = try await conductor.trigger(TriggerRequest(
            action: action, params: request.params ?? [:], policy: request.policy, peer: connection.peer,
            wait: !(request.detach ?? false)))
        var response = Response(id: request.id)
        response.decision = Self.name(ticket.decision)
        response.shared = ticket.shared
        response.run = ticket.run
        if let updates = ticket.updates {
            guard let final = await follow(updates, id: request.id, connection) else {
                throw WireError(code: "shutting_down", message: "batond stopped before run \(ticket.run.id) ended; it stays in the history")
            }
            response.run = final
        }
        return response
    }

    private func wait(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        guard let run = request.run else { throw WireError(code: "bad_request", message: "wait needs \"run\"") }
        // One history read, and only for a run that has ended (the rare race: it ends between
        // the snapshot and attaching, and is read then).
        let live = await conductor.snapshot(of: run)
        let ended = live == nil ? try await store.read({ try $0.run(run) })?.run : nil
        guard let action = live?.action ?? ended?.action else { throw BatonError.unknownRun(run) }
        try await require(.read, action, request, connection.peer)
        var response = Response(id: request.id)
        if live != nil, let updates = await conductor.attach(run) {
            guard let final = await follow(updates, id: request.id, connection) else {
                throw WireError(code: "shutting_down", message: "batond stopped before run \(run) ended")
            }
            response.run = final
        } else if let ended {
            response.run = ended
        } else {
            guard let detail = try await store.read({ try $0.run(run) }) else { throw BatonError.unknownRun(run) }
            response.run = detail.run
        }
        return response
    }

    private func status(_ request: Request, _ connection: ServerConnection) async -> Response {
        let all = await conductor.configuredActions()
        let everything = await conductor.inFlight()
        let visible = await readable(all.map(\.name) + everything.map(\.action), connection.peer)
        let actions = all.filter { visible.contains($0.name) }
        let live = everything.filter { visible.contains($0.action) }
        let last = await conductor.lastOutcomes()
        var infos = actions.map { action -> ActionInfo in
            var info = ActionInfo(action)
            info.inFlight = live.filter { $0.action == action.name }
            info.last = last[action.name]
            return info
        }
        // Runs of actions removed by a reload still show until they end.
        for run in live where !actions.contains(where: { $0.name == run.action }) {
            if let index = infos.firstIndex(where: { $0.name == run.action }) {
                infos[index].inFlight?.append(run)
                continue
            }
            var info = ActionInfo(name: run.action, description: nil, exec: [], policy: run.policy,
                                  policies: [], timeout: nil, params: [:], keyParams: [], inFlight: [run], last: last[run.action])
            info.removed = true
            infos.append(info)
        }
        var response = Response(id: request.id)
        response.actions = infos
        return response
    }

    private func actions(_ request: Request, _ connection: ServerConnection) async -> Response {
        let all = await conductor.configuredActions()
        let visible = await readable(all.map(\.name), connection.peer)
        var response = Response(id: request.id)
        response.actions = all.filter { visible.contains($0.name) }.map(ActionInfo.init)
        return response
    }

    private func history(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        let filter = request.filter ?? HistoryFilter()
        guard filter.limit >= 0, filter.limit <= 100_000 else {
            throw WireError(code: "bad_request", message: "filter.limit must be from 0 to 100000")
        }
        let runs = try await store.read { try $0.runs(filter) }
        let visible = await readable(runs.map(\.action), connection.peer)
        var response = Response(id: request.id)
        response.runs = runs.filter { visible.contains($0.action) }
        return response
    }

    private func denied(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        try await require(.admin, nil, request, connection.peer)
        let limit = request.filter?.limit ?? 50
        var response = Response(id: request.id)
        response.triggers = try await store.read { try $0.denied(limit: limit) }
        return response
    }

    private func stats(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        let actions = request.action.map { [$0] } ?? request.filter?.actions ?? []
        let since = request.filter?.since
        let stats = try await store.read { try $0.stats(actions: actions, since: since) }
        let visible = await readable(stats.map(\.action), connection.peer)
        var response = Response(id: request.id)
        response.stats = stats.filter { visible.contains($0.action) }
        return response
    }

    private func show(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        guard let run = request.run else { throw WireError(code: "bad_request", message: "show needs \"run\"") }
        guard var detail = try await store.read({ try $0.run(run) }) else { throw BatonError.unknownRun(run) }
        try await require(.read, detail.run.action, request, connection.peer)
        if let live = await conductor.snapshot(of: run) { detail.run.progress = live.progress }
        var response = Response(id: request.id)
        response.detail = detail
        return response
    }

    private func cancel(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        var response = Response(id: request.id)
        if let run = request.run {
            guard let live = await conductor.snapshot(of: run) else { throw BatonError.unknownRun(run) }
            try await require(.cancel, live.action, request, connection.peer)
            let snapshot = try await conductor.cancel(run: run, by: connection.peer)
            response.run = snapshot
            response.runs = [snapshot]
        } else if let action = request.action {
            try await require(.cancel, action, request, connection.peer)
            let ids = try await conductor.cancel(action: action, key: request.key, by: connection.peer)
            let live = await conductor.inFlight()
            response.runs = ids.map { id in live.first { $0.id == id } }.compactMap { $0 }
        } else {
            throw WireError(code: "bad_request", message: "cancel needs \"run\" or \"action\"")
        }
        return response
    }

    private func reload(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        try await require(.admin, nil, request, connection.peer)
        if let problem = await reload() { throw WireError(code: "bad_request", message: problem) }
        return Response(id: request.id)
    }

    private func prune(_ request: Request, _ connection: ServerConnection) async throws -> Response {
        try await require(.admin, nil, request, connection.peer)
        var response = Response(id: request.id)
        do {
            response.prune = try await prune(request.dryRun ?? false)
        } catch let error as BatonError {
            throw error
        } catch {
            throw BatonError.storeUnavailable("\(error)")
        }
        return response
    }

    /// Sends each update of a run as an event; returns the final snapshot, or nil if the stream
    /// ended before the run did (shutdown).
    private func follow(_ updates: AsyncStream<RunUpdate>, id: RequestID?, _ connection: ServerConnection) async -> RunSnapshot? {
        var last: RunSnapshot?
        for await update in updates {
            last = update.run
            if !update.run.phase.isTerminal { send(.update(id, update), to: connection) }
        }
        return last?.phase.isTerminal == true ? last : nil
    }

    private func watch(_ request: Request, _ connection: ServerConnection) async {
        let updates = await conductor.watch(action: request.action)
        var started = Response(id: request.id, ok: nil)
        started.event = "watching"
        send(started, to: connection)
        var visible: [String: Bool] = [:]
        for await update in updates {
            if Task.isCancelled { break }
            guard update.transition != nil else { continue }
            let action = update.run.action
            if visible[action] == nil { visible[action] = await allowed(.read, action, connection.peer) }
            guard visible[action] == true else { continue }
            send(.update(request.id, update), to: connection)
        }
        if !Task.isCancelled {
            send(.failure(request.id, WireError(code: "shutting_down", message: "batond is shutting down")), to: connection)
        }
    }

    /// Shared by every request: JSONEncoder and JSONDecoder are safe to use from many threads once configured.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()
    private static let decoder = JSONDecoder()

    func send(_ response: Response, to connection: ServerConnection) {
        guard let data = try? Self.encoder.encode(response) else { return }
        connection.send(Array(data))
    }

    static func name(_ decision: FlightTable.Decision) -> String {
        switch decision {
        case .created: "created"
        case .followUp: "followUp"
        case .joined: "joined"
        case .coalesced: "coalesced"
        case .rejected: "rejected"
        case .replaced: "replaced"
        }
    }

    /// The id of a request that failed to decode, when its text still has one, so the error can echo it.
    static func salvageID(_ bytes: [UInt8]) -> RequestID? {
        struct OnlyID: Decodable { var id: RequestID? }
        return (try? decoder.decode(OnlyID.self, from: Data(bytes)))?.id
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let DecodingError.keyNotFound(key, context):
            return "missing field \(Self.path(context.codingPath + [key]))"
        case let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context):
            return "\(Self.path(context.codingPath)): \(context.debugDescription)"
        case let DecodingError.dataCorrupted(context):
            if context.codingPath.isEmpty { return "not a JSON object: \(context.debugDescription)" }
            return "\(Self.path(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
