import BatonCore

extension Service {
    /// A press from beyond the socket (a webhook that has proven it holds its hook's secret):
    /// the same check of the action's policy and params as a socket `trigger`, the same
    /// dispatcher, the same metrics. There is no socket peer, so no access rule applies: the
    /// config that names the hook and its action is the grant. `via` says where it came from,
    /// and is kept with the run it creates; `delivery`, when the sender named one, is recorded
    /// with the run it creates or joins, in the same write: a delivery already recorded (by another
    /// host of a fleet) fails with `.delivered`, naming its run. `follower` gets the run's updates until its end.
    public func press(_ name: String, params: [String: String], via: String, delivery: Delivery?, follower: Conductor.Follower?,
                      answered: @escaping @Sendable (Result<(TriggerDecision, RunSnapshot), BatonError>) -> Void) {
        // The generation in force is the loop's: a press from elsewhere is posted there.
        guard reactor.isCurrent else {
            return reactor.post { [self] in press(name, params: params, via: via, delivery: delivery, follower: follower, answered: answered) }
        }
        guard let action = generation.actions[name] else { return answered(.failure(.unknownAction(name))) }
        let trigger: Trigger
        do throws(BatonError) {
            let sealed = try action.seal(try action.resolveParams(params), with: conductor.sealer)
            trigger = Trigger(action: action, key: sealed.key, policy: try action.resolvePolicy(nil), params: sealed.params,
                              peer: nil, force: try action.checkForce(nil), via: via, delivery: delivery, secrets: sealed.secrets)
        } catch {
            return answered(.failure(error))
        }
        let metrics = metrics
        dispatcher.trigger(trigger, follower: follower) { result in
            switch result {
            case let .failure(error):
                if case .busy = error { metrics.triggered(name, decision: TriggerDecision.rejected.rawValue) }
                if case .rateLimited = error { metrics.triggered(name, decision: Self.rateLimited) }
                answered(.failure(error))
            case let .success((decision, run)):
                metrics.triggered(name, decision: TriggerDecision(decision).rawValue)
                answered(.success((TriggerDecision(decision), run)))
            }
        }
    }

    /// Follows a run: `answered` gets it as it is now (nil when it is not in flight), then
    /// `follower` its updates until its end.
    public func follow(run id: Int64, follower: @escaping Conductor.Follower, answered: @escaping @Sendable (RunSnapshot?) -> Void) {
        dispatcher.attach(id, follower: follower, answered: answered)
    }

    /// A run as it is now: in flight, or as the history has it; nil when there is none.
    public func lookUp(run id: Int64) async throws(BatonError) -> RunSnapshot? {
        if let live = dispatcher.snapshot(of: id) { return live }
        return try await history.run(id)?.run
    }
}
