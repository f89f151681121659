extension Conductor {
    /// Pauses an action (`baton pause`): its triggers are refused `paused` until `resume` or the
    /// pause's end. Answered with the pause once it is durable.
    public func pause(_ pause: ActionPause, answered: @escaping @Sendable (Result<ActionPause?, BatonError>) -> Void) {
        ask({ .pause($0, pause) }, .pause(answered))
    }

    /// Ends an action's pause (`baton resume`): answered with the pause it ended, nil when the
    /// action was not paused, once the resume is durable.
    public func resume(action: String, by: String, answered: @escaping @Sendable (Result<ActionPause?, BatonError>) -> Void) {
        ask({ .resume($0, action: action, by: by) }, .pause(answered))
    }

    /// The fleet's pauses as its database held them in a read begun at `readAt` (a fleet host's
    /// feed): this conductor's view follows, nothing written (`ConductorState.Event.pausesSeen`).
    public func seen(pauses: [ActionPause], readAt: Timestamp) {
        send(.pausesSeen(pauses, readAt: readAt))
    }

    public func pause(_ pause: ActionPause) async throws(BatonError) -> ActionPause? {
        try await withCheckedContinuation { continuation in self.pause(pause) { continuation.resume(returning: $0) } }.get()
    }

    public func resume(action: String, by: String) async throws(BatonError) -> ActionPause? {
        try await withCheckedContinuation { continuation in resume(action: action, by: by) { continuation.resume(returning: $0) } }.get()
    }

    /// The actions paused now, each with its pause.
    public func pauses(at now: Timestamp = .now) -> [String: ActionPause] {
        reading { state in state.pauses.filter { $0.value.holds(at: now) } }
    }

    /// Each rate-limited bucket of `action` with starts inside its window (`ConductorState.rateUse`), for status.
    public func rateUse(_ action: Action, at now: Timestamp = .now) -> [(key: String, left: Int, frees: Timestamp?)] {
        guard action.rateLimit != nil else { return [] }
        return reading { $0.rateUse(action, at: now) }
    }
}
