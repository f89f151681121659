import BatonCore

/// What `status` says: every action the peer may read, with its runs in flight and its last run.
public struct BatonStatus: Sendable, Equatable {
    public var actions: [ActionInfo]
    /// Why the history cannot be written right now (new triggers are refused meanwhile), if so.
    public var storeProblem: String?
    /// How batond keeps track of each run's processes.
    public var processTree: String?

    public init(actions: [ActionInfo], storeProblem: String? = nil, processTree: String? = nil) {
        self.actions = actions
        self.storeProblem = storeProblem
        self.processTree = processTree
    }
}

extension BatonClient {
    /// Asks `query` among this client's other calls and reads its answer.
    public func ask<Value>(_ query: BatonQuery<Value>) async throws -> Value {
        guard query.pages != nil else { return try query.read(try await call(query.request)) }
        // The reader hands each page over through a stream: every page came before the final
        // answer, so once it has, the stream is finished and read to its end.
        let (stream, handing) = AsyncStream<Response>.makeStream()
        let final = try await call(query.request) { event in
            if query.isPage(event) { handing.yield(event) }
        }
        handing.finish()
        var pages: [Response] = []
        for await page in stream { pages.append(page) }
        return try query.read(BatonQuery<Value>.gathered(final, pages))
    }

    /// The actions the peer may read, each with its runs in flight (`inFlight`) and last ended run (`last`).
    public func status() async throws -> BatonStatus {
        try await ask(.status)
    }

    /// The runs `filter` selects, newest first (oldest first with `reverse`), 50 by default.
    public func history(_ filter: HistoryFilter = HistoryFilter()) async throws -> [RunSnapshot] {
        try await ask(.history(filter))
    }

    /// A run's whole story: the run, its transitions, the triggers it answered, its output's tail.
    /// Throws `.unknownRun` when no run has that id.
    public func show(_ run: Int64) async throws -> RunDetail {
        try await ask(.show(run))
    }

    /// Waits for run `run` to end and returns it as it ended (at once if it has); `updates` gets
    /// each of its updates (phases, progress) before that.
    public func wait(run: Int64, updates: @escaping @Sendable (RunUpdate) -> Void = { _ in }) async throws -> RunSnapshot {
        let response = try await call(Request(op: .wait, run: run)) { event in RunUpdate(event).map(updates) }
        guard let snapshot = response.run else {
            throw BatonClientError.internal("batond answered wait \(run) without the run")
        }
        return snapshot
    }

    /// Cancels run `run`: a queued or retrying run ends `cancelled` at once, a loading one is
    /// returned still `loading` while its processes stop (`wait(run:)` for its end). A run that
    /// had ended is returned as it ended.
    @discardableResult
    public func cancel(run: Int64) async throws -> [RunSnapshot] {
        try await call(Request(op: .cancel, run: run)).runs ?? []
    }

    /// Cancels the runs in flight of `action` (only those of `key`, a key as `status` shows it, if given).
    @discardableResult
    public func cancel(action: String, key: String? = nil) async throws -> [RunSnapshot] {
        try await call(Request(op: .cancel, action: action, key: key)).runs ?? []
    }

    /// batond's version (`ping`).
    public func version() async throws -> String {
        try await ask(.version)
    }

    /// Every committed transition of the runs the peer may read (of `action` only, if given), as
    /// they come, and with `progress` every progress report too. It never ends while batond runs;
    /// it throws `.unavailable` when the connection ends. Cancelling the task that iterates it, or
    /// letting go of the stream (a `break` out of a loop over a stream nobody else holds), ends
    /// the watch for this client: batond's further lines for it are dropped. A stream still
    /// held after a `break` keeps watching until it is released. `started` is called once
    /// batond has begun the watch (its `watching` event): every transition committed after that
    /// is yielded. With `after` (the last transition seen by an earlier watch), the transitions
    /// committed after it come first, each once, oldest first; `skipped` is told how many were
    /// left out (past `Replay.bound`, the oldest) before they come.
    public func watch(action: String? = nil, progress: Bool = false, after: WatchCursor? = nil,
                      started: @escaping @Sendable () -> Void = {},
                      skipped: @escaping @Sendable (Int64) -> Void = { _ in }) -> AsyncThrowingStream<RunUpdate, any Error> {
        let (stream, continuation) = AsyncThrowingStream<RunUpdate, any Error>.makeStream()
        let sink = Sink(event: { response in
            if response.event == "watching" {
                if let count = response.skipped, count > 0 { skipped(count) }
                started()
            }
            if let update = RunUpdate(response) { continuation.yield(update) }
        }, end: { result in
            continuation.finish(throwing: Result { try Self.answer(result) }.refusal)
        })
        let request = Request(op: .watch, action: action, progress: progress ? true : nil, after: after)
        if let id = connection.handle(.call(request, sink)) {
            continuation.onTermination = { [connection] _ in connection.handle(.leave(id)) }
        }
        return stream
    }
}
