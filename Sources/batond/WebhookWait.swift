import BatonCore

/// One `?wait=` answer: the run as the trigger's answer gave it, then its end from the
/// follower, in whichever order they come; `finish` is called with the end, or with the run as
/// it was when the wait ran out (the exchange takes the first answer only).
final class WebhookWait: Sendable {
    private let state = Locked<(run: RunSnapshot?, ended: RunSnapshot?, timer: Reactor.TimerID?)>((nil, nil, nil))
    private let finish: @Sendable (RunSnapshot, _ ended: Bool) -> Void
    private let reactor: Reactor

    init(reactor: Reactor = .shared, finish: @escaping @Sendable (RunSnapshot, _ ended: Bool) -> Void) {
        self.reactor = reactor
        self.finish = finish
    }

    /// Ends the wait after `duration` with the run as last seen: a loop timer, cancelled when the
    /// run ends first (no task sleeps out the whole wait for an answer already given).
    func timeOut(after duration: Duration) {
        let timer = reactor.after(duration) { [self] in timedOut() }
        let over = state.withLock { state -> Bool in
            state.timer = timer
            return state.ended != nil && state.run != nil
        }
        if over { reactor.cancel(timer) }
    }

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
            if state.ended == nil && run.phase.isTerminal { state.ended = run }
            return state.ended
        }
        if let ended { end(ended) }
    }

    private func ended(_ run: RunSnapshot) {
        let known = state.withLock { state -> Bool in
            state.ended = run
            return state.run != nil
        }
        if known { end(run) }
    }

    /// The run ended: its answer, and the timer goes.
    private func end(_ run: RunSnapshot) {
        if let timer = state.withLock({ $0.timer }) { reactor.cancel(timer) }
        finish(run, true)
    }

    /// The wait ran out: the run as last seen.
    func timedOut() {
        if let run = state.withLock({ $0.ended ?? $0.run }) { finish(run, run.phase.isTerminal) }
    }
}
