extension Conductor {
    /// Runs `body` as the in-process action `name`, with single flight and history, and returns
    /// the run's final state: `success`, `failure` (the body threw, or timed out) or `cancelled`.
    ///
    /// ```swift
    /// let run = try await conductor.run("refresh-cache", .join, .retry(attempts: 3)) { context in
    ///     context.progress(0.5, "halfway")
    /// }
    /// ```
    ///
    /// A call that joins a run in flight shares that run's body and outcome (as Go's singleflight
    /// does); with `.reject` it throws `busy`. The options define the action the first time it
    /// runs and again on each call, so calls of one name should pass the same options.
    public func run(
        _ name: String, _ options: ActionOption..., params: [String: String] = [:],
        body: @escaping ClosureRunner.Body
    ) async throws(BatonError) -> RunSnapshot {
        var action = Action(name: name)
        for option in options { option.apply(&action) }
        let existing = shared.withLock { registry -> Action? in
            if let existing = registry.actions[name], !existing.exec.isEmpty { return existing }
            if registry.actions[name] != action {
                registry.actions[name] = action
                registry.loaded += 1
            }
            return nil
        }
        if existing != nil { throw .badRequest("\(name) is a configured process action, not an in-process one") }
        let trigger = try resolve(TriggerRequest(action: name, params: params), runner: RunnerBox(ClosureRunner(body)))
        let ticket = try await self.trigger(trigger, follow: true)
        guard let outcome = await ticket.outcome() else { throw .shuttingDown }
        return outcome
    }
}
