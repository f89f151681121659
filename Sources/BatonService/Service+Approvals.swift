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
        // A caller who may not read the run's action is told nothing of it, as `show` would: the
        // dispatcher checks it on the run it finds (a fleet's on its row, not yet seen here perhaps).
        let peer = exchange.peer
        let mayRead: @Sendable (String) -> Bool = { [self] in allowed(.read, $0, generation, peer) }
        dispatcher.decide(run: run, by: approver(peer), approve: request.op == .approve, reason: request.op == .deny ? reason : nil,
                          mayRead: mayRead) {
            switch $0 {
            case let .failure(.unknownRun(id)): self.decideEnded(id, exchange, generation)
            case let .failure(error) where error.code == .forbidden: self.refuseDecision(run, error, exchange)
            case let .failure(error): exchange.fail(error)
            case let .success(run):
                var response = Response(id: exchange.id)
                response.run = run
                exchange.finish(response)
            }
        }
    }

    /// A refused approve or deny (not an approver, or the run's own trigger): recorded against
    /// the run as refused requests are (`history --denied`), then answered.
    private func refuseDecision(_ run: Int64, _ error: BatonError, _ exchange: Exchange) {
        let live = dispatcher.snapshot(of: run)
        let record = TriggerRecord(runID: run, action: live?.action ?? "", key: live?.key ?? "", decision: .deniedApproval,
                                   policy: live?.policy ?? .reject, peer: exchange.peer, at: .now, params: [:],
                                   via: "\(exchange.request.op.rawValue) of run \(run)")
        journal.enqueue([.trigger(record)]) { _ in exchange.fail(error) }
    }

    /// A decision on a run no longer in flight: from the history, `not_waiting` naming how it was
    /// decided (or that it ended undecided); `unknown_run` where there is no such run or the
    /// caller may not read it.
    private func decideEnded(_ id: Int64, _ exchange: Exchange, _ generation: Generation) {
        reads.read({ [self] () async throws(BatonError) -> RunSnapshot in
            guard let found = try await history.run(id)?.run, allowed(.read, found.action, generation, exchange.peer) else {
                throw .unknownRun(id)
            }
            return found
        }) { result in
            switch result {
            case let .failure(error): exchange.fail(error)
            case let .success(found): exchange.fail(.notWaiting(run: id, Self.notWaiting(found)))
            }
        }
    }

    /// Why a run out of flight takes no decision: `run 3 of deploy was decided already: denied by bob: not today`.
    static func notWaiting(_ run: RunSnapshot) -> String {
        guard let approval = run.approval else { return "run \(run.id) of \(run.action) does not wait for approval" }
        if let decided = approval.decisionText { return "run \(run.id) of \(run.action) was decided already: \(decided)" }
        return "run \(run.id) of \(run.action) ended \(run.phase.rawValue) before a decision"
    }

    /// `approvals`: the runs waiting for the caller's yes now (of actions whose `approve.by`
    /// includes them, their own excluded unless `self: true`), oldest first.
    /// A fleet's are every host's, read from its database.
    func approvals(_ request: Request, _ exchange: Exchange, _ generation: Generation) {
        dispatcher.awaitingApproval(by: approver(exchange.peer)) { [self] found in
            // A fleet's database not read is said, not answered as "nothing waits".
            let runs: [RunSnapshot]
            switch found {
            case let .failure(error): return exchange.fail(error)
            case let .success(found): runs = found
            }
            var response = Response(id: request.id)
            // Only runs of actions the caller may read: a run it could not decide (`unknown_run`) is not offered.
            response.runs = runs.filter { allowed(.read, $0.action, generation, exchange.peer) }
            exchange.finish(response)
        }
    }

    /// The longest reason a deny may give, in bytes.
    static let longestReason = 1_024
}
