import BatonCore

extension Service {
    /// Checks the trigger against this generation's action (access, policy, params) and hands
    /// the conductor the resolved trigger. Nothing here waits: the answer goes out from whichever
    /// thread learns that the decision is durable. Params whose patterns could take long to
    /// match (a long value against a large pattern) are matched by the read driver, off the loop,
    /// the trigger going to the dispatcher from the loop once they are.
    func trigger(_ exchange: Exchange, _ generation: Generation) {
        let request = exchange.request
        guard let name = request.action else { return exchange.fail(.badRequest("trigger needs \"action\"")) }
        guard let action = generation.actions[name] else { return exchange.fail(.unknownAction(name)) }
        guard allowed(.trigger, name, generation, exchange.peer) else { return refuse(.trigger, name, exchange) }
        let (params, sealer) = (request.params ?? [:], conductor.sealer)
        if action.matchingCost(params) <= Self.inlineMatchingBudget {
            // Resolved here, not in a closure: no context to allocate, nothing copied into one.
            do throws(BatonError) { start(try Self.resolve(action, params, request, exchange.peer, sealer), exchange) } catch { exchange.fail(error) }
        } else {
            reads.read({ () async throws(BatonError) -> Trigger in try Self.resolve(action, params, request, exchange.peer, sealer) }) { [self] result in
                switch result {
                case let .success(trigger): start(trigger, exchange)
                case let .failure(error): exchange.fail(error)
                }
            }
        }
    }

    /// The trigger a request asks for, its policy, params and force checked against the action.
    private static func resolve(_ action: Action, _ params: [String: String], _ request: Request, _ peer: Peer,
                                _ sealer: SecretSealer?) throws(BatonError) -> Trigger {
        let policy = try action.resolvePolicy(request.policy)
        let sealed = try action.seal(try action.resolveParams(params), with: sealer)
        let force = try action.checkForce(request.force)
        let slot = try Action.checkSlot(request.slot)
        return Trigger(action: action, key: sealed.key, policy: policy, params: sealed.params, peer: peer, force: force,
                       via: slot == nil ? peer.principal : "schedule", slot: slot, secrets: sealed.secrets)
    }

    /// The decision `baton_triggers_total` counts a trigger refused by its action's rate limit under.
    static let rateLimited = "rateLimited"

    /// Automaton steps of param matching done on the server's thread (well under a millisecond).
    static let inlineMatchingBudget = 50_000

    private func start(_ trigger: Trigger, _ exchange: Exchange) {
        let detach = exchange.request.detach ?? false
        let relay = detach ? nil : RunRelay(exchange, reactor: reactor, rendered: rendered)
        let (metrics, rendered) = (metrics, rendered)
        dispatcher.trigger(trigger, follower: relay?.follower) { result in
            switch result {
            case let .failure(error):
                if case .busy = error { metrics.triggered(trigger.action.name, decision: TriggerDecision.rejected.rawValue) }
                if case .rateLimited = error { metrics.triggered(trigger.action.name, decision: Self.rateLimited) }
                exchange.fail(error)
            case let .success((decision, run)):
                metrics.triggered(trigger.action.name, decision: TriggerDecision(decision).rawValue)
                let fill = { (response: inout Response) in
                    response.decision = TriggerDecision(decision)
                    response.shared = decision.isShared
                    if case .cooled = decision { response.cooldown = trigger.action.cooldown?.microseconds }
                    if case let .replaced(_, stopping) = decision { response.replaced = stopping }
                    response.run = run
                }
                if let relay { relay.set(fill) } else {
                    var response = Response(id: exchange.id)
                    fill(&response)
                    exchange.finish(line: rendered.line(response))
                }
            }
        }
    }

    /// Follows a run to its end; an ended run is answered from the history.
    func wait(_ exchange: Exchange, _ generation: Generation) {
        guard let id = exchange.request.run else { return exchange.fail(.badRequest("wait needs \"run\"")) }
        guard let live = dispatcher.snapshot(of: id) else { return waitEnded(id, exchange, generation) }
        guard allowed(.read, live.action, generation, exchange.peer) else { return exchange.fail(forbidden(.read, live.action, exchange)) }
        let relay = RunRelay(exchange, reactor: reactor, rendered: rendered)
        dispatcher.attach(id, follower: relay.follower) { [self] run in
            // Ended between the two looks: the history has its outcome.
            if run == nil { waitEnded(id, exchange, generation) }
        }
    }

    /// A run the dispatcher does not know as in flight: the history says whether it ended (then
    /// that is the answer) or is in flight after all (a fleet host learns of other hosts' runs a
    /// little later than they start): then it is followed like any other.
    private func waitEnded(_ id: Int64, _ exchange: Exchange, _ generation: Generation) {
        reads.read({ [self] () async throws(BatonError) -> RunSnapshot in
            guard let found = try await history.run(id)?.run else { throw .unknownRun(id) }
            try await require(.read, found.action, generation, exchange.request, exchange.peer)
            return found
        }) { [self] result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case let .success(found) where !found.phase.isTerminal:
                let relay = RunRelay(exchange, reactor: reactor, rendered: rendered)
                dispatcher.attach(id, follower: relay.follower) { [self] run in
                    if run == nil { finishFromHistory(id, exchange) }
                }
            case let .success(found):
                var response = Response(id: exchange.id)
                response.run = found
                exchange.finish(response)
            }
        }
    }

    /// Answers with the run as the history has it (it ended between two looks).
    private func finishFromHistory(_ id: Int64, _ exchange: Exchange) {
        reads.read({ [history] () async throws(BatonError) -> RunSnapshot? in try await history.run(id)?.run }) { result in
            switch result {
            case let .success(run):
                var response = Response(id: exchange.id)
                response.run = run
                exchange.finish(response)
            case let .failure(error): exchange.fail(error)
            }
        }
    }

    /// Cancels by run or by action (and key). A run that has already ended is answered as it
    /// ended, not as unknown: cancelling it again is not an error.
    func cancel(_ exchange: Exchange, _ generation: Generation) {
        let request = exchange.request
        let target: ConductorState.CancelTarget
        let name: String
        if let id = request.run {
            guard let live = dispatcher.snapshot(of: id) else { return cancelEnded(id, exchange, generation) }
            (target, name) = (.run(id), live.action)
        } else if let action = request.action {
            guard generation.actions[action] != nil || dispatcher.inFlight().contains(where: { $0.action == action }) else {
                return exchange.fail(.unknownAction(action))
            }
            (target, name) = (.action(action, key: request.key), action)
        } else {
            return exchange.fail(.badRequest("cancel needs \"run\" or \"action\""))
        }
        guard allowed(.cancel, name, generation, exchange.peer) else { return refuse(.cancel, name, exchange) }
        dispatcher.cancel(target, by: exchange.peer) { result in
            switch result {
            case let .failure(.unknownRun(id)): self.cancelEnded(id, exchange, generation)
            case let .failure(error): exchange.fail(error)
            case let .success(runs):
                var response = Response(id: exchange.id)
                if case .run = target { response.run = runs.first }
                response.runs = runs
                exchange.finish(response)
            }
        }
    }

    private func cancelEnded(_ id: Int64, _ exchange: Exchange, _ generation: Generation) {
        reads.read({ [self] () async throws(BatonError) -> RunSnapshot in
            guard let found = try await history.run(id)?.run else { throw .unknownRun(id) }
            try await require(.cancel, found.action, generation, exchange.request, exchange.peer)
            return found
        }) { [self] result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case let .success(found) where !found.phase.isTerminal:
                // In flight after all (started on another host a moment ago): cancel it.
                dispatcher.cancel(.run(id), by: exchange.peer) { result in
                    switch result {
                    case let .failure(error): exchange.fail(error)
                    case let .success(runs):
                        var response = Response(id: exchange.id)
                        response.run = runs.first
                        response.runs = runs
                        exchange.finish(response)
                    }
                }
            case let .success(found):
                var response = Response(id: exchange.id)
                response.runs = [found]
                exchange.finish(response)
            }
        }
    }
}
