/// A run's output, attempt → loop → store: each run's `OutputLimiter` lives in the conductor's
/// core, its writes go to the store's queue with the transitions (so they share group commits),
/// at most one in flight per run, a chunk's worth or 50 ms after the first byte waiting.
extension Conductor {
    /// How long output waits for more before it is written.
    static let outputDelay: Duration = .milliseconds(50)

    /// Takes bytes an attempt of `run` wrote (on the loop).
    func keepOutput(run: Int64, keep: Int64, _ stream: StandardStream, _ bytes: [UInt8]) {
        guard reactor.isCurrent else { return reactor.post { [self] in keepOutput(run: run, keep: keep, stream, bytes) } }
        let now = Timestamp.now
        let (write, arm) = core.withLock { core -> (OutputWrite?, Bool) in
            var limiter = core.outputs[run] ?? OutputLimiter(runID: run, keep: keep)
            let waited = limiter.pendingSince != nil
            let due = limiter.append(bytes, from: stream, at: now)
            let write = due ? limiter.write() : nil
            core.outputs[run] = limiter
            return (write, !waited && limiter.pendingSince != nil)
        }
        if let write { enqueue(write) }
        if arm { reactor.after(Self.outputDelay) { [weak self] in self?.flushOutput(run) } }
    }

    /// Writes what waits of the run's output, unless a write is in flight (or `final`: the attempt ended).
    func flushOutput(_ run: Int64, final: Bool = false) {
        let write = core.withLock { core -> OutputWrite? in core.outputs[run]?.write(final: final) }
        if let write { enqueue(write) }
    }

    private func enqueue(_ write: OutputWrite) {
        let run = write.runID
        store.enqueue([.outputChunks(write)]) { [weak self] _ in
            self?.reactor.post { [weak self] in self?.outputCommitted(run) }
        }
    }

    /// The last write of the run's output is done: what waited meanwhile goes next.
    private func outputCommitted(_ run: Int64) {
        let again = core.withLock { core -> Bool in core.outputs[run]?.committed() ?? false }
        if again { flushOutput(run) }
    }
}
