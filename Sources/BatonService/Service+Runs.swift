import BatonCore
import BatonIPC

extension Service {
    /// Checks the trigger against this generation's action (access, policy, params: patterns
    /// run here, on the request's own task) and hands the conductor the resolved trigger.
    func trigger(_ request: Request, _ generation: Generation, _ connection: ServerConnection) async throws(BatonError) -> Response {
        guard let name = request.action else { throw .badRequest("trigger needs \"action\"") }
        guard let action = generation.actions[name] else { throw .unknownAction(name) }
        try await require(.trigger, name, generation, request, connection.peer)
        let policy = try action.resolvePolicy(request.policy)
        let params = try action.resolveParams(request.params ?? [:])
        let trigger = Trigger(action: action, key: action.key(for: params), policy: policy, params: params, peer: connection.peer)
        let ticket = try await conductor.trigger(trigger, follow: !(request.detach ?? false))
        var response = Response(id: request.id)
        response.decision = TriggerDecision(ticket.decision)
        response.shared = ticket.shared
        response.run = ticket.run
        if let updates = ticket.updates {
            response.run = try await follow(updates, id: request.id, run: ticket.run.id, connection)
        }
        return response
    }

    func wait(_ request: Request, _ generation: Generation, _ connection: ServerConnection) async throws(BatonError) -> Response {
        guard let id = request.run else { throw .badRequest("wait needs \"run\"") }
        var response = Response(id: request.id)
        if let live = conductor.snapshot(of: id) {
            try await require(.read, live.action, generation, request, connection.peer)
            if let updates = await conductor.attach(id) {
                response.run = try await follow(updates, id: request.id, run: id, connection)
                return response
            }
        }
        // Ended (or ended between the two looks): the history has its outcome.
        guard let ended = try await history.run(id)?.run else { throw .unknownRun(id) }
        try await require(.read, ended.action, generation, request, connection.peer)
        response.run = ended
        return response
    }

    /// Cancels by run or by action (and key). A run that has already ended is answered as it
    /// ended, not as unknown: cancelling it again is not an error.
    func cancel(_ request: Request, _ generation: Generation, _ connection: ServerConnection) async throws(BatonError) -> Response {
        var response = Response(id: request.id)
        if let id = request.run {
            guard let live = conductor.snapshot(of: id) else {
                guard let ended = try await history.run(id)?.run else { throw .unknownRun(id) }
                try await require(.cancel, ended.action, generation, request, connection.peer)
                response.runs = [ended]
                return response
            }
            try await require(.cancel, live.action, generation, request, connection.peer)
            let run = try await conductor.cancel(run: id, by: connection.peer)
            response.run = run
            response.runs = [run]
        } else if let name = request.action {
            guard generation.actions[name] != nil || conductor.inFlight().contains(where: { $0.action == name }) else {
                throw .unknownAction(name)
            }
            try await require(.cancel, name, generation, request, connection.peer)
            response.runs = try await conductor.cancel(action: name, key: request.key, by: connection.peer)
        } else {
            throw .badRequest("cancel needs \"run\" or \"action\"")
        }
        return response
    }

    /// Sends each update of a run as an event; returns the final snapshot. Throws
    /// `shutting_down` when the stream ends before the run does.
    func follow(_ updates: AsyncStream<RunUpdate>, id: RequestID?, run: Int64, _ connection: ServerConnection) async throws(BatonError) -> RunSnapshot {
        var last: RunSnapshot?
        for await update in updates {
            last = update.run
            if !update.run.phase.isTerminal { send(.update(id, update), to: connection) }
        }
        guard let last, last.phase.isTerminal else {
            throw .stopped("batond stopped before run \(run) ended; it stays in the history")
        }
        return last
    }
}
