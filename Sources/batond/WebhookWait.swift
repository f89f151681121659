import BatonCore

/// One `?wait=` answer: the run as the trigger's answer gave it, then its end from the
/// follower, in whichever order they come; `finish` is called with the end, or with the run as
/// it was when the wait ran out. Owned by the loop (no lock): the follower's updates are posted
/// there. It ends once — answered, run out, or dropped because its client went (`cancel`) —
/// and then `over` is told, its timer is cancelled and what it held (the runs, the answer's
/// closure and the exchange in it) is let go: the follower the dispatcher keeps until the run
/// ends is left holding an empty wait.
final class WebhookWait: Sendable {
    private struct State {
        var run: RunSnapshot?
        var ended: RunSnapshot?
        var timer: Reactor.TimerID?
        var over = false
        var finish: (@Sendable (RunSnapshot, _ ended: Bool) -> Void)?
        var onOver: (@Sendable () -> Void)?
    }

    /// What `close` takes out of a wait that was not over yet.
    private struct Taken {
        var timer: Reactor.TimerID?
        var finish: (@Sendable (RunSnapshot, _ ended: Bool) -> Void)?
        var onOver: (@Sendable () -> Void)?
    }

    private let state: LoopOwned<State>
    private let reactor: Reactor

    init(reactor: Reactor, finish: @escaping @Sendable (RunSnapshot, _ ended: Bool) -> Void, over: @escaping @Sendable () -> Void = {}) {
        self.reactor = reactor
        state = LoopOwned(State(finish: finish, onOver: over), on: reactor)
    }

    /// Ends the wait after `duration` with the run as last seen: a loop timer, cancelled when the
    /// run ends first or the client goes (no task sleeps out the whole wait).
    func timeOut(after duration: Duration) {
        let arm = state.access { !$0.over && $0.timer == nil }
        guard arm else { return }
        let timer = reactor.after(duration) { [self] in timedOut() }
        state.access { $0.timer = timer }
    }

    /// The run's updates: its terminal one ends the wait (on the loop).
    var follower: Conductor.Follower {
        { [self] update in
            if let update, update.run.phase.isTerminal { reactor.onLoop { [self] in ended(update.run) } }
        }
    }

    /// The trigger was answered with `run` (it may have ended already, or end later).
    func answered(_ run: RunSnapshot) {
        let ended = state.access { state -> RunSnapshot? in
            state.run = run
            if state.ended == nil && run.phase.isTerminal { state.ended = run }
            return state.ended
        }
        if let ended { end(ended, true) }
    }

    /// The client went: no answer; the timer and the run the wait held go now.
    func cancel() {
        guard let taken = close() else { return }
        if let timer = taken.timer { reactor.cancel(timer) }
        taken.onOver?()
    }

    /// Whether the wait has ended (answered, run out or dropped).
    var isOver: Bool { state.access { $0.over } }

    private func ended(_ run: RunSnapshot) {
        let known = state.access { state -> Bool in
            state.ended = run
            return state.run != nil
        }
        if known { end(run, true) }
    }

    /// The wait ran out: the run as last seen.
    func timedOut() {
        guard let run = state.access({ $0.ended ?? $0.run }) else { return }
        state.access { $0.timer = nil }
        end(run, run.phase.isTerminal)
    }

    private func end(_ run: RunSnapshot, _ ended: Bool) {
        guard let taken = close() else { return }
        if let timer = taken.timer { reactor.cancel(timer) }
        taken.finish?(run, ended)
        taken.onOver?()
    }

    /// Marks the wait over, letting go of all it held; what to cancel and call, or nil when it was over already.
    private func close() -> Taken? {
        state.access { state -> Taken? in
            guard !state.over else { return nil }
            defer { state = State(over: true) }
            return Taken(timer: state.timer, finish: state.finish, onOver: state.onOver)
        }
    }
}
