import BatonCore

extension Service {
    /// `pause` and `resume` of one action, by a peer holding `pause` on it (root and batond's own
    /// user always do): answered with the pause made or ended, once it is durable. One machine's
    /// for now: a fleet host refuses them (issue 40, item 4, fleet-wide: not yet).
    func pause(_ exchange: Exchange, _ generation: Generation) {
        let request = exchange.request
        guard let name = request.action else { return exchange.fail(.badRequest("\(request.op.rawValue) needs \"action\"")) }
        guard generation.actions[name] != nil else { return exchange.fail(.unknownAction(name)) }
        guard allowed(.pause, name, generation, exchange.peer) else { return refuse(.pause, name, exchange) }
        guard dispatcher is Conductor else {
            return exchange.fail(.badRequest("pauses are one machine's for now: a fleet host cannot \(request.op.rawValue) an action"))
        }
        // The name the lookup thread read with the peer's groups (never NSS on the loop).
        let by = knownName(exchange.peer) ?? "uid \(exchange.peer.uid)"
        let answered: @Sendable (Result<ActionPause?, BatonError>) -> Void = { result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case let .success(pause):
                var response = Response(id: exchange.id)
                response.pause = pause
                exchange.finish(response)
            }
        }
        guard request.op == .pause else { return conductor.resume(action: name, by: by, answered: answered) }
        guard let reason = request.reason, !reason.trimmingWhitespace().isEmpty else {
            return exchange.fail(.badRequest("pause needs a \"reason\": it is what a refused trigger is told"))
        }
        if let duration = request.duration, duration <= 0 || duration > Self.longestPause {
            return exchange.fail(.badRequest("pause \"duration\" must be more than 0 and at most 100 years (in microseconds)"))
        }
        let now = Timestamp.now
        conductor.pause(ActionPause(action: name, by: by, reason: reason, at: now, until: request.duration.map { now + .microseconds($0) }),
                        answered: answered)
    }

    /// The longest pause a `duration` may ask for (100 years in microseconds): a timestamp past it
    /// would overflow.
    static let longestPause: Int64 = 100 * 366 * 86_400 * 1_000_000
}
