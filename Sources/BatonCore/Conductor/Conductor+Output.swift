import Synchronization

/// A run's output, attempt → loop → store: each run's `OutputLimiter` lives in the conductor's
/// core, its writes go to the store's queue with the transitions (so they share group commits),
/// at most one in flight per run, a chunk's worth or 50 ms after the first byte waiting.
extension Conductor {
    /// Told each chunk of a run's output it follows, then nil at the run's end. On the loop: it must not block.
    public typealias OutputFollower = @Sendable (OutputChunk?) -> Void

    /// How long output waits for more before it is written.
    static let outputDelay: Duration = .milliseconds(50)

    /// Which run an attempt's output is of, and what its lines are named by.
    struct OutputSource: Sendable {
        var run: Int64
        var attempt: Int
        var action: String
        var key: String
        var keep: Int64
    }

    /// Takes bytes an attempt of a run wrote (on the loop).
    func keepOutput(_ source: OutputSource, _ stream: StandardStream, _ bytes: [UInt8]) {
        guard reactor.isCurrent else { return reactor.post { [self] in keepOutput(source, stream, bytes) } }
        let bytes = redacted(source.run, stream, bytes)
        guard !bytes.isEmpty else { return }
        let (run, keep, now) = (source.run, source.keep, Timestamp.now)
        let sink = options.lineSink
        let (write, arm, start, followers, lines, leader) = core.access { core -> (OutputWrite?, Bool, Int64, [OutputFollower], [[UInt8]], Int32?) in
            var lines: [[UInt8]] = []
            if sink != nil {
                var splitter = core.lines[run] ?? OutputLines()
                lines = splitter.append(bytes, from: stream)
                core.lines[run] = splitter
            }
            var limiter = core.outputs[run] ?? OutputLimiter(runID: run, keep: keep)
            let start = limiter.total
            let waited = limiter.pendingSince != nil
            let due = limiter.append(bytes, from: stream, at: now)
            let write = due ? limiter.write() : nil
            core.outputs[run] = limiter
            let followers = core.outputFollowers.values.filter { $0.run == run }.map(\.follower)
            return (write, !waited && limiter.pendingSince != nil, start, followers, lines, core.leaders[run])
        }
        for line in lines {
            sink?.write(OutputLine(runID: run, attempt: source.attempt, pid: leader, action: source.action, key: source.key,
                                   stream: stream, bytes: line))
        }
        // Followers get every byte, also those past keep, as it arrives.
        if !followers.isEmpty {
            let chunk = OutputChunk(start: start, stream: stream, at: now, bytes: bytes)
            for follower in followers { follower(chunk) }
        }
        if let write { enqueue(write) }
        if arm { reactor.after(Self.outputDelay) { [weak self] in self?.flushOutput(run) } }
    }

    /// Follows a run's output live. On the loop, `ready` is told the position the live chunks
    /// start from, once every byte before it is durable in the store (so a reader of the history
    /// up to it, then of the live chunks, misses nothing and repeats nothing); nil when the run is
    /// not in flight (all it wrote is in the history). Then `follower` gets each chunk from that
    /// position as it arrives, on the loop, and nil once the run's end is durable.
    /// Returns the id to stop following with.
    @discardableResult
    public func followOutput(run: Int64, _ follower: @escaping OutputFollower, ready: @escaping @Sendable (Int64?) -> Void) -> Int {
        let id = ids.wrappingAdd(1, ordering: .relaxed).oldValue
        reactor.post { [self] in register(id, run, follower, ready) }
        return id
    }

    /// Stops telling a follower of output (its client went).
    public func stopFollowingOutput(_ id: Int) {
        reactor.post { [self] in core.access { _ = $0.outputFollowers.removeValue(forKey: id) } }
    }

    private func register(_ id: Int, _ run: Int64, _ follower: @escaping OutputFollower, _ ready: @escaping @Sendable (Int64?) -> Void) {
        let known = reading { $0.snapshot(of: run) != nil }
        let live = core.access { core -> (position: Int64, write: OutputWrite?)? in
            guard known, !core.followersEnded else { return nil }
            core.outputFollowers[id] = (run, follower)
            return (core.outputs[run]?.total ?? 0, core.outputs[run]?.write(final: true))
        }
        guard let live else { return ready(nil) }
        if let write = live.write { enqueue(write) }
        // The writer commits in order: once this empty item is done, so is every write before it.
        write([]) { _ in ready(live.position) }
    }

    /// Writes what waits of the run's output, unless a write is in flight (or `final`: the attempt ended).
    func flushOutput(_ run: Int64, final: Bool = false) {
        let write = core.access { core -> OutputWrite? in core.outputs[run]?.write(final: final) }
        if let write { enqueue(write) }
    }

    private func enqueue(_ write: OutputWrite) {
        let run = write.runID
        self.write([.outputChunks(write)]) { [weak self] _ in
            self?.reactor.post { [weak self] in self?.outputCommitted(run) }
        }
    }

    /// An attempt ended: the line sink gets what it left without a newline.
    func finishLines(_ run: Int64, attempt: Int) {
        guard let sink = options.lineSink else { return }
        let name = reading { $0.snapshot(of: run).map { (action: $0.action, key: $0.key) } }
        let (left, leader) = core.access { core -> ([(stream: StandardStream, line: [UInt8])], Int32?) in
            let left = core.lines[run]?.finish() ?? []
            core.lines[run] = nil
            return (left, core.leaders.removeValue(forKey: run))
        }
        guard let name else { return }
        for (stream, line) in left {
            sink.write(OutputLine(runID: run, attempt: attempt, pid: leader, action: name.action, key: name.key, stream: stream, bytes: line))
        }
    }

    /// The last write of the run's output is done: what waited meanwhile goes next.
    private func outputCommitted(_ run: Int64) {
        let (again, past) = core.access { core -> (Bool, Bool) in
            (core.outputs[run]?.committed() ?? false, core.outputs[run]?.isPastKeep ?? false)
        }
        guard again else { return }
        // Past keep, each write only slides the tail: one per delay is enough, and leaves the
        // writer free for other runs' transitions (a flood would otherwise keep it busy).
        if past { reactor.after(Self.outputDelay) { [weak self] in self?.flushOutput(run) } } else { flushOutput(run) }
    }
}
