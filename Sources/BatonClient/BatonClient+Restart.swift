import BatonCore

extension BatonClient {
    /// Waits for run `run` to end on connections of its own, riding out a restart of batond
    /// (docs/architecture.md, "Restart in place") or a stop that a start follows: a connection
    /// lost before the end is made again, and the wait asked again, while batond cannot be
    /// reached for at most `bound` in a row, counted from when batond was last heard (a connection
    /// made, an update, its `{"restarting":true}` line), not from the first connection: a wait
    /// attached for hours still gets the whole bound after a stop. (A restart in place keeps the
    /// socket: the new batond answers from its backlog; a stop and start under systemd refuses for
    /// a moment.) Updates go to `updates` as they come, on every connection (the first of each is
    /// the run as it is then). Never throws `.restarting`: past the bound it throws `.unavailable`.
    public static func wait(run: Int64, socket: String?, reconnectingFor bound: Duration = .seconds(30),
                            updates: @escaping @Sendable (RunUpdate) -> Void = { _ in }) async throws -> RunSnapshot {
        try await wait(run: run, socket: socket, reconnectingFor: bound, clock: ContinuousClock(), updates: updates)
    }

    /// `wait(run:socket:reconnectingFor:updates:)` with its bound counted on `clock` (a test's,
    /// which makes time pass without waiting it out).
    static func wait<C: Clock>(run: Int64, socket: String?, reconnectingFor bound: Duration, clock: C,
                               updates: @escaping @Sendable (RunUpdate) -> Void) async throws -> RunSnapshot where C.Duration == Duration {
        var reached = clock.now
        while true {
            // The reader tells of each update as it comes; the loop takes the latest once the wait ended.
            let (heard, hearing) = AsyncStream<C.Instant>.makeStream(bufferingPolicy: .bufferingNewest(1))
            do {
                let client = try BatonClient(socket: socket)
                reached = clock.now
                return try await client.wait(run: run) { update in
                    hearing.yield(clock.now)
                    updates(update)
                }
            } catch let error as BatonClientError {
                // Every update came before the wait's end: what the reader heard is all in the stream.
                hearing.finish()
                for await instant in heard { reached = instant }
                // batond's last line is batond heard: the loss counts from it.
                if case .restarting = error { reached = clock.now }
                if error.endedByRestart { reached = clock.now }
                let within = reached.duration(to: clock.now) < bound
                switch error {
                // At the bound, `.unavailable` even for a wait the last batond did not take: a
                // caller's closure that triggered the run first must not send it again
                // (`Context.call` resends on `.restarting`).
                case let .restarting(message): guard within else { throw BatonClientError.unavailable(message) }
                case .unavailable: guard within else { throw error }
                default: throw error
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

extension BatonClient {
    /// `watch(action:progress:)` on connections of its own, riding out a restart of batond in
    /// place or a stop and start: a watch its `{"restarting":true}` line ended is made again on a
    /// new connection (the new batond answers from the socket's backlog), and so is one batond
    /// could not be reached for, up to `bound` in a row. Each watch again names the last
    /// transition yielded (`after`; before any, the time the first watch began), so what was
    /// committed meanwhile comes first, each once, none missing; `skipped` is told when more than
    /// `Replay.bound` were and the oldest were left out. Ends (throwing) on any other error;
    /// cancelling the iterating task, or letting go of the stream, ends it. It connects and reads
    /// on a thread of its own (`ReconnectingWatch`), not on Swift's cooperative pool: updates come
    /// while a caller blocks every pool thread. `started` and `skipped` are called on that thread.
    public static func watch(action: String? = nil, progress: Bool = false, socket: String?, reconnectingFor bound: Duration = .seconds(30),
                             started: @escaping @Sendable () -> Void = {},
                             skipped: @escaping @Sendable (Int64) -> Void = { _ in }) -> AsyncThrowingStream<RunUpdate, any Error> {
        let (stream, continuation) = AsyncThrowingStream<RunUpdate, any Error>.makeStream()
        let watch = ReconnectingWatch(socket: socket, action: action, progress: progress, bound: bound, started: started, skipped: skipped)
        continuation.onTermination = { _ in watch.cancel() }
        watch.start(continuation)
        return stream
    }
}

extension WatchCursor? {
    /// A watch began at `at` (its `watching` event; nil: not yet): the first one sets the cursor
    /// to then, so that the next watch names it before any transition was sent.
    public mutating func begin(at: Timestamp?) {
        if self == nil, let at { self = WatchCursor(at: at, run: 0, seq: 0) }
    }

    /// An update was sent: its transition moves the cursor, never back.
    public mutating func saw(_ update: RunUpdate) {
        guard let transition = update.transition else { return }
        let seen = WatchCursor(transition)
        self = Swift.max(self ?? seen, seen)
    }
}
