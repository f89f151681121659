import BatonCore

extension Service {
    /// `pause` and `resume` of one action, by a peer holding `pause` on it (root and batond's own
    /// user always do): answered with the pause made or ended, once it is durable. In a fleet,
    /// decided on the pauses the database holds (`RunDispatcher.readPauses`) and written there.
    func pause(_ exchange: Exchange, _ generation: Generation) {
        let request = exchange.request
        guard let name = request.action else { return exchange.fail(.badRequest("\(request.op.rawValue) needs \"action\"")) }
        guard generation.actions[name] != nil else { return exchange.fail(.unknownAction(name)) }
        guard allowed(.pause, name, generation, exchange.peer) else { return refuse(.pause, name, exchange) }
        if request.op == .pause, request.reason.map({ $0.trimmingWhitespace().isEmpty }) ?? true {
            return exchange.fail(.badRequest("pause needs a \"reason\": it is what a refused trigger is told"))
        }
        if let duration = request.duration, duration <= 0 || duration > Self.longestPause {
            return exchange.fail(.badRequest("pause \"duration\" must be more than 0 and at most 100 years (in microseconds)"))
        }
        // The name the lookup thread read with the peer's groups (never NSS on the loop).
        // A group principal: the person the dashboard named (`carol@example.org via group:ops`), not the uid they share.
        let by = exchange.peer.principal ?? knownName(exchange.peer) ?? "uid \(exchange.peer.uid)"
        let answered: @Sendable (Result<ActionPause?, BatonError>) -> Void = { result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case let .success(pause):
                var response = Response(id: exchange.id)
                response.pause = pause
                exchange.finish(response)
            }
        }
        let conductor = self.conductor
        dispatcher.readPauses { problem in
            if let problem { return answered(.failure(problem)) }
            guard request.op == .pause, let reason = request.reason else { return conductor.resume(action: name, by: by, answered: answered) }
            let now = Timestamp.now
            conductor.pause(ActionPause(action: name, by: by, reason: reason, at: now, until: request.duration.map { now + .microseconds($0) },
                                         hold: request.hold ?? false),
                            answered: answered)
        }
    }

    /// The longest pause a `duration` may ask for (100 years in microseconds): a timestamp past it
    /// would overflow.
    static let longestPause: Int64 = 100 * 366 * 86_400 * 1_000_000
}
