import BatonCore

extension Service {
    /// `approve` and `deny` of one run, by the peer as an `Approver` (its uid, name and groups, as
    /// the lookup thread read them): the engine decides whether they may (one of the action's
    /// `approve.by`, not the run's trigger unless `self: true`; root and batond's owner only where
    /// listed) and whether the run still waits. Answered with the run once the decision is durable.
    func approval(_ exchange: Exchange, _ generation: Generation) {
        let request = exchange.request
        guard let run = request.run else { return exchange.fail(.badRequest("\(request.op.rawValue) needs \"run\"")) }
        if let reason = request.reason, reason.utf8.count > Self.longestReason {
            return exchange.fail(.badRequest("a deny's \"reason\" is at most \(Self.longestReason) bytes"))
        }
        let reason = request.reason.flatMap { $0.trimmingWhitespace().isEmpty ? nil : String($0.trimmingWhitespace()) }
        conductor.decide(run: run, by: approver(exchange.peer), approve: request.op == .approve, reason: request.op == .deny ? reason : nil) {
            switch $0 {
            case let .failure(error): exchange.fail(error)
            case let .success(run):
                var response = Response(id: exchange.id)
                response.run = run
                exchange.finish(response)
            }
        }
    }

    /// `approvals`: the runs waiting for the caller's yes now (of actions whose `approve.by`
    /// includes them, their own excluded unless `self: true`), oldest first.
    func approvals(_ request: Request, _ exchange: Exchange) -> Response {
        var response = Response(id: request.id)
        response.runs = conductor.awaitingApproval(by: approver(exchange.peer))
        return response
    }

    /// The longest reason a deny may give, in bytes.
    static let longestReason = 1_024
}
