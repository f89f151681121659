extension Conductor {
    /// Shutting down: asks a run's attempt to leave its process to its shim
    /// (`ConductorState+HandOver`). Once it has, every byte it read has been told (`keepOutput`),
    /// and what of it waits is written now, before the state hears it is kept: the next batond's
    /// output of the run starts from the total the history holds.
    func handOver(_ run: Int64, attempt number: Int) {
        guard let attempt = core.access({ $0.attempts[run] }) else {
            return send(.handedOver(run: run, attempt: number, kept: false))
        }
        attempt.handOver { [weak self] kept in
            guard let self else { return }
            guard reactor.isCurrent else { return reactor.post { [self] in handedOver(run, number, kept) } }
            handedOver(run, number, kept)
        }
    }

    private func handedOver(_ run: Int64, _ attempt: Int, _ kept: Bool) {
        if kept {
            flushOutput(run, final: true)
            finishLines(run, attempt: attempt)
        }
        send(.handedOver(run: run, attempt: attempt, kept: kept))
    }
}
