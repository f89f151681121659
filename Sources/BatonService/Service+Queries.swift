import BatonCore
import FoundationEssentials
import Glibc

extension Service {
    func ping(_ request: Request) -> Response {
        var response = Response(id: request.id)
        response.version = BatonVersion.current
        response.pid = Self.pid
        return response
    }

    /// batond's pid, asked once (glibc's `getpid` is a system call each time).
    static let pid = getpid()

    /// Each action the peer may read: its runs in flight (every key) and its last outcome; actions
    /// a reload removed show while their runs are still in flight.
    func status(_ request: Request, _ generation: Generation, _ connection: any Caller) -> Response {
        let live = dispatcher.inFlight()
        let last = conductor.lastOutcomes()
        let successes = Dictionary(grouping: conductor.lastSuccesses().values, by: \.action)
        let clocks = conductor.lastSuccessClocks()
        let (now, uptime) = (Timestamp.now, Timestamp.uptime)
        let pauses = conductor.pauses(at: now)
        let visible = readable(generation.actions.keys + live.map(\.action), generation, connection.peer)
        let byAction = Dictionary(grouping: live.filter { visible.contains($0.action) }, by: \.action)
        var infos = generation.sortedActions.filter { visible.contains($0.name) }.map { action -> ActionInfo in
            var info = ActionInfo(action)
            info.inFlight = byAction[action.name] ?? []
            info.last = last[action.name]
            info.allowed = permissions(action.name, generation, connection.peer)
            info.paused = pauses[action.name]
            if let limit = action.rateLimit {
                info.rateLimit = RateInfo(limit, used: conductor.rateUse(action, at: now).map { .init(key: $0.key, left: $0.left, frees: $0.frees?.rawValue) })
            }
            if let window = action.cooldown {
                // The keys whose window is open, as the engine decides it (`KeySlot.cools`), each
                // with when it closes: measured on the boot's clock, told on the wall clock.
                info.cooling = (successes[action.name] ?? []).compactMap { run -> RunSnapshot? in
                    guard let ended = run.endedAt else { return nil }
                    let elapsed = clocks[run.key].flatMap { $0.run == run.id ? $0.elapsed(at: uptime) : nil } ?? (now - ended)
                    guard KeySlot.cools(lastSuccess: ended, cooldown: window, forced: false, allowsForce: false, now: now,
                                        elapsed: elapsed) else { return nil }
                    var cooling = run
                    cooling.coolsUntil = now + (window - elapsed)
                    return cooling
                }.sorted { $0.id < $1.id }
            }
            return info
        }
        for (name, runs) in byAction.sorted(by: { $0.key < $1.key }) where generation.actions[name] == nil {
            var info = ActionInfo(name: name, description: nil, exec: [], policy: runs[0].policy, policies: [], timeout: nil,
                                  params: [:], keyParams: [], inFlight: runs, last: last[name])
            info.removed = true
            info.allowed = permissions(name, generation, connection.peer)
            infos.append(info)
        }
        var response = Response(id: request.id)
        response.actions = infos
        response.storeProblem = journal.unavailableReason
        response.processTree = processTree
        return response
    }

    func actions(_ request: Request, _ generation: Generation, _ connection: any Caller) -> Response {
        var response = Response(id: request.id)
        response.actions = generation.sortedActions.filter { allowed(.read, $0.name, generation, connection.peer) }.map { action in
            var info = ActionInfo(action)
            info.allowed = permissions(action.name, generation, connection.peer)
            return info
        }
        return response
    }

    /// What the peer may do with an action: read, trigger, cancel (admin is not an action's).
    func permissions(_ name: String, _ generation: Generation, _ peer: Peer) -> [Permission] {
        [Permission.read, .trigger, .cancel, .pause].filter { allowed($0, name, generation, peer) }
    }

    func history(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        let filter = request.filter ?? HistoryFilter()
        guard filter.limit > Self.historyPage else { return try await historyPage(filter, request.id, generation, connection.peer).answer }
        // A long answer goes a page at a time, each a `runs` event, the last in the final answer:
        // each page is read (by id, on from the last) once the client has taken all but
        // `historyDrain` of the one before, so a request costs about a page, however long.
        var page = filter
        var left = filter.limit
        while true {
            page.limit = min(left, Self.historyPage)
            var (answer, read) = try await historyPage(page, request.id, generation, connection.peer)
            left -= read.count
            guard read.count == page.limit, left > 0, let last = read.last, !connection.isClosed else { return answer }
            answer.ok = nil
            answer.event = "runs"
            connection.send(answer.jsonLine())
            await connection.drained(below: Self.historyDrain)
            page.after = last.id
        }
    }

    /// The runs of one page: the answer (those the peer may read) and every run read (for where
    /// the next page starts and whether there is one).
    private func historyPage(_ filter: HistoryFilter, _ id: RequestID?, _ generation: Generation,
                             _ peer: Peer) async throws(BatonError) -> (answer: Response, read: [RunSnapshot]) {
        let runs = try await history.runs(filter)
        let visible = readable(runs.map(\.action), generation, peer)
        var response = Response(id: id)
        response.runs = runs.filter { visible.contains($0.action) }
        return (response, runs)
    }

    func show(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        guard let id = request.run else { throw .badRequest("show needs \"run\"") }
        guard var detail = try await history.run(id) else { throw .unknownRun(id) }
        try await require(.read, detail.run.action, generation, request, connection.peer)
        if let live = dispatcher.snapshot(of: id) {
            detail.run.progress = live.progress
            detail.run.waiting = live.waiting
        }
        // The runs it needs and that need it: only those of actions the peer may read.
        let related = (detail.run.needs ?? []) + (detail.run.neededBy ?? [])
        if !related.isEmpty {
            let visible = readable(related.map(\.action), generation, connection.peer)
            detail.run.needs = detail.run.needs?.filter { visible.contains($0.action) }
            detail.run.neededBy = detail.run.neededBy?.filter { visible.contains($0.action) }
        }
        var response = Response(id: request.id)
        response.detail = detail
        return response
    }

    /// Stats of the actions named, each once (an unknown one is an error, as for every other
    /// operation), or of all.
    func stats(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        let filter = request.filter ?? HistoryFilter()
        let names = request.action.map { [$0] } ?? filter.actions
        let stats = try await history.stats(actions: names, since: filter.since)
        let totals = Dictionary(stats.map { ($0.action, $0.total) }, uniquingKeysWith: +)
        for name in names where generation.actions[name] == nil && (totals[name] ?? 0) == 0 {
            throw .unknownAction(name)
        }
        let visible = readable(stats.map(\.action), generation, connection.peer)
        var response = Response(id: request.id)
        response.stats = stats.filter { visible.contains($0.action) }
        return response
    }

    func denied(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        try await require(.admin, nil, generation, request, connection.peer)
        let filter = request.filter ?? HistoryFilter()
        var response = Response(id: request.id)
        response.triggers = try await history.denied(limit: filter.limit)
        return response
    }

    /// The actions' pauses and resumes, newest first: of the actions the peer may read.
    func events(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        var filter = request.filter ?? HistoryFilter()
        if let action = request.action { filter.actions = [action] }
        if filter.actions.isEmpty {
            // Only actions the peer may read take places in the limit.
            let visible = readable(generation.actions.keys, generation, connection.peer)
            if visible.count < generation.actions.count { filter.actions = visible.sorted() }
            if visible.isEmpty, !generation.actions.isEmpty { return Response(id: request.id).with(events: []) }
        }
        let events = try await history.events(filter)
        let visible = readable(events.map(\.action), generation, connection.peer)
        return Response(id: request.id).with(events: events.filter { visible.contains($0.action) })
    }

    func reload(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        try await require(.admin, nil, generation, request, connection.peer)
        switch await hooks.reload(self) {
        case let .refused(problem): throw .badRequest(problem)
        case let .applied(warnings):
            var response = Response(id: request.id)
            response.warnings = warnings.isEmpty ? nil : warnings
            return response
        }
    }

    /// `restart`: batond hands its runs over and executes itself again in place (SIGUSR2);
    /// answered once asked, or refused with why it cannot (its executable gone: batond serves on).
    /// The connection then ends with the others (`{"restarting":true}`).
    func restart(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        try await require(.admin, nil, generation, request, connection.peer)
        if let problem = hooks.restart() { throw .badRequest("cannot restart in place: \(problem)") }
        return Response(id: request.id)
    }

    func prune(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        try await require(.admin, nil, generation, request, connection.peer)
        var response = Response(id: request.id)
        response.prune = try await hooks.prune(request.dryRun ?? false)
        return response
    }

    /// Streams every committed transition of the actions the peer may read (checked against the
    /// generation in force at each), until the connection closes or batond stops. Each update is
    /// sent from the loop (a fleet host's conductor tells of other hosts' transitions from the
    /// feed's thread: those are posted there): no task, no lock, and no buffer, so a watcher that
    /// stops reading is held to the connection's output limit alone. With `after` (the last
    /// transition the client saw), what was committed since goes first (`WatchRelay`).
    func watch(_ exchange: Exchange) -> Int? {
        let request = exchange.request
        if let name = request.action, generation.actions[name] == nil {
            exchange.fail(.unknownAction(name))
            return nil
        }
        exchange.connection.markStreaming()
        let relay = request.after.map { _ in WatchRelay(exchange, reactor: reactor, rendered: rendered) }
        // Registered before "watching" goes out (and before the replay is read), so that nothing
        // committed after the client hears it is missed: this runs on the loop, so an update
        // handled there comes after it.
        let id = conductor.observe(action: request.action, progress: request.progress ?? false) { [self] update in
            reactor.onLoop { [self] in
                guard let update else {
                    relay?.letGo()
                    return exchange.fail(.stopped("batond is shutting down"))
                }
                guard allowed(.read, update.run.action, generation, exchange.peer) else { return }
                if let relay { relay.live(update) } else { exchange.event(line: rendered.updateLine(request.id, update)) }
            }
        }
        exchange.park()
        guard let relay, let cursor = request.after else {
            var started = Response(id: request.id, ok: nil)
            started.event = "watching"
            exchange.event(started)
            return id
        }
        replay(after: cursor, exchange, relay, observer: id)
        return id
    }

    /// Reads what was committed after the cursor (by the read driver) and hands it to the relay
    /// on the loop; a replay that cannot be read fails the watch (the client is told why).
    private func replay(after cursor: WatchCursor, _ exchange: Exchange, _ relay: WatchRelay, observer: Int) {
        let action = exchange.request.action
        reads.read({ [history] () async throws(BatonError) -> Replay in
            try await history.transitions(after: cursor, action: action, limit: Replay.bound)
        }) { [self] result in
            switch result {
            case let .success(replay):
                let generation = generation, peer = exchange.peer
                relay.replayed(replay) { allowed(.read, $0.run.action, generation, peer) }
            case let .failure(error):
                relay.letGo()
                conductor.stopObserving(observer)
                exchange.fail(error)
            }
        }
    }
}

extension Response {
    fileprivate func with(events: [ActionEvent]) -> Response {
        var response = self
        response.events = events
        return response
    }
}
