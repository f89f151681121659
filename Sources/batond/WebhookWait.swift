import BatonCore

/// One `?wait=` answer: the run as the trigger's answer gave it, then its end from the
/// follower, in whichever order they come; `finish` is called with the end, or with the run as
/// it was when the wait ran out (the exchange takes the first answer only).
final class WebhookWait: Sendable {
    private let state = Locked<(run: RunSnapshot?, ended: RunSnapshot?)>((nil, nil))
    private let finish: @Sendable (RunSnapshot, _ ended: Bool) -> Void

    init(finish: @escaping @Sendable (RunSnapshot, _ ended: Bool) -> Void) { self.finish = finish }

    /// The run's updates: its terminal one ends the wait.
    var follower: Conductor.Follower {
        { [self] update in
            if let update, update.run.phase.isTerminal { ended(update.run) }
        }
    }

    /// The trigger was answered with `run` (it may have ended already, or end later).
    func answered(_ run: RunSnapshot) {
        let ended = state.withLock { state -> RunSnapshot? in
            state.run = run
            return state.ended ?? (run.phase.isTerminal ? run : nil)
        }
        if let ended { finish(ended, true) }
    }

    private func ended(_ run: RunSnapshot) {
        let known = state.withLock { state -> Bool in
            state.ended = run
            return state.run != nil
        }
        if known { finish(run, true) }
    }

    /// The wait ran out: the run as last seen.
    func timedOut() {
        if let run = state.withLock({ $0.ended ?? $0.run }) { finish(run, run.phase.isTerminal) }
    }
}
