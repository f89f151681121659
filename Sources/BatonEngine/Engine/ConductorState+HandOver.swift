/// A planned stop that keeps the runs (issue 41, part 1; docs/architecture.md, "A run outlives
/// batond"): at shutdown, each run loading an attempt that survives restarts is handed to its
/// shim (`Effect.handOver`) instead of being given the grace and then stopped. The conductor
/// answers `handedOver`: kept, the run stays `loading` in the history (no transition is written)
/// and no longer holds the exit; the next batond adopts it. Not kept (no shim: an in-process run,
/// a run as another user, a shim that could not be made), it is stopped as before once the grace
/// is over. A run waiting to retry is left at once (it has no process): the next batond waits
/// out the rest of its backoff (`ConductorState.resumeRetrying`). A run with secret params is not handed over either (the next batond could not mask
/// their values in its output). A run being stopped (cancel, timeout, replace) is not handed over: its stop goes on.
/// A run whose start is being written when the shutdown begins (write-ahead: no process yet) is asked once it
/// launches (`launchOnceDurable`), as are the attempts launched during the drain.
public enum HandOver: Sendable, Equatable {
    /// Asked of its attempt; what it relayed is being read to the end.
    case asked
    /// Left to its shim: this batond neither waits for it nor stops it.
    case done
}

extension Action {
    /// Whether a run of this action may be left to the next batond: handed over or left waiting
    /// to retry at shutdown, or resumed waiting to retry at recovery. The one test of both sides:
    /// never a pseudo-terminal's run, nor one of an action with a secret param (a secret's value
    /// lives in this batond's memory only: the next one could not mask it in the output kept meanwhile).
    var mayOutliveBatond: Bool { survivesRestart && !tty && secretParams.isEmpty }
}

extension ConductorState {
    /// Whether a run's attempt may be left to its shim: loading, not being stopped, its action
    /// one that survives restarts (never a pseudo-terminal's, nor a hook's run: their files are batond's).
    static func mayHandOver(_ flight: Flight) -> Bool {
        guard case .loading = flight.machine.state, flight.machine.stopping == nil, flight.live != nil, !flight.launchWaits else { return false }
        return flight.action.mayOutliveBatond && flight.hook == nil
    }

    /// At the start of a shutdown: asks each run that may be handed over to be.
    mutating func handOverSurvivors(_ step: inout Step) {
        guard handsOver else { return }
        for id in flights.keys.sorted() {
            guard let flight = flights[id] else { continue }
            if Self.mayHandOver(flight) {
                flights[id]?.handOver = .asked
                step.emit(.handOver(run: id, attempt: flight.live ?? 0))
            } else if leavesRetrying, Self.mayLeaveRetrying(flight) {
                // No process: its `retrying` and backoff are in the history, for the next batond to wait out.
                flights[id]?.handOver = .done
                step.emit(.cancelTimers(run: id))
            }
        }
    }

    /// Whether a run waiting to retry may be left for the next batond to wait out its backoff.
    static func mayLeaveRetrying(_ flight: Flight) -> Bool {
        guard case .retrying = flight.machine.state else { return false }
        return flight.action.mayOutliveBatond && flight.hook == nil
    }

    /// An attempt ended while its hand-over was asked: the answer, when it comes, is for no live
    /// attempt and is ignored, so the run is settled here: waiting to retry, it is left as the
    /// shutdown leaves such runs (it may be: it was asked), not left for the drain to wait on its next attempt.
    mutating func endedWhileAsked(_ id: Int64, _ step: inout Step) {
        guard mode == .draining, leavesRetrying, let flight = flights[id], Self.mayLeaveRetrying(flight) else { return }
        flights[id]?.handOver = .done
        step.emit(.cancelTimers(run: id))
        step.after.append(.leftRetrying(id))
    }

    /// The conductor's answer to `handOver`. Kept: the run's timers go (the next batond arms them
    /// again) and the drain no longer waits for it. Not kept: it is batond's again, stopped at
    /// once when the grace is over already.
    mutating func handedOver(_ id: Int64, attempt: Int, kept: Bool, _ step: inout Step) {
        guard let flight = flights[id], flight.handOver == .asked, flight.live == attempt else { return }
        flights[id]?.handOver = kept ? .done : nil
        if kept {
            step.emit(.cancelTimers(run: id))
        } else if graceOver || !waitsForWrites {
            drive(id, .stop(.shutdown), &step)
        }
        drainIfDone(&step)
    }

    /// The shutdown grace is over: every run still loading or retrying stops, but those handed over.
    mutating func graceElapsed(_ step: inout Step) {
        guard mode == .draining else { return }
        graceOver = true
        stopActive(.shutdown, &step)
    }
}
