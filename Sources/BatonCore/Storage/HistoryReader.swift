/// The queries the service asks of the history, beside the conductor's writes. `BatonStore.Store`
/// answers them from SQLite, off the caller's thread; errors come as `storeUnavailable` naming
/// the database, never as SQL.
public protocol HistoryReader: Sendable {
    /// Runs matching a filter, newest first (oldest first with `reverse`).
    func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot]
    /// The whole story of one run, or nil when there is no such run.
    func run(_ id: Int64) async throws(BatonError) -> RunDetail?
    /// Outcomes and durations per action (all actions in the history when `actions` is empty).
    func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats]
    /// Refused requests, newest first.
    func denied(limit: Int) async throws(BatonError) -> [TriggerRecord]
    /// The runs of `action` that first went loading at or after `since`, whenever they were queued
    /// (a rate limit's window at start).
    func started(_ action: String, since: Timestamp) async throws(BatonError) -> [RunSnapshot]
    /// The actions' pauses and resumes `filter` selects (its actions, window and limit), newest first.
    func events(_ filter: HistoryFilter) async throws(BatonError) -> [ActionEvent]
    /// The last ended run of each action.
    func lastEnded() async throws(BatonError) -> [RunSnapshot]
    /// Recent successful durations (microseconds, oldest first) of these actions.
    func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]]
    /// A run's kept output from `offset`, about `maxBytes` of it; nil when the history keeps no
    /// chunks of the run.
    func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage?
    /// The runs `filter` selects whose kept output or param values hold `text` (without regard to
    /// case), newest first, up to `filter.limit`, each with its first matching lines; cut short
    /// at its budget of bytes read, or (answering what it found) once `stop` says the asker has gone.
    func search(_ text: String, _ filter: HistoryFilter, stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult
    /// The files a run kept (`artifacts`) and the notices about them.
    func artifacts(of run: Int64) async throws(BatonError) -> ArtifactList
    /// Up to `maxBytes` of the artifact `name` of `run` from `offset`; nil when the run kept no such file.
    func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) async throws(BatonError) -> ArtifactPiece?
    /// The transitions committed after `cursor` (of `action`, or all), oldest first, each with its
    /// run as it is now: at most `limit`, the newest, and how many older ones were left out.
    func transitions(after cursor: WatchCursor, action: String?, limit: Int) async throws(BatonError) -> Replay
}

extension HistoryReader {
    /// From the latest runs (a history without a query by start time: a fleet's, which has no
    /// rate limits).
    public func started(_ action: String, since: Timestamp) async throws(BatonError) -> [RunSnapshot] {
        try await runs(HistoryFilter(actions: [action], limit: HistoryFilter.maxLimit)).filter { $0.startedAt.map { $0 >= since } ?? false }
    }

    /// A history that keeps no pauses (an in-memory one) has no events.
    public func events(_ filter: HistoryFilter) async throws(BatonError) -> [ActionEvent] { [] }

    /// A history that keeps no output chunks has none of any run.
    public func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage? { nil }

    /// A history that keeps no transitions has none to send again.
    public func transitions(after cursor: WatchCursor, action: String?, limit: Int) async throws(BatonError) -> Replay { Replay() }

    /// A history that keeps no artifacts (an in-memory one) has none of any run.
    public func artifacts(of run: Int64) async throws(BatonError) -> ArtifactList { ArtifactList(run: run) }

    public func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) async throws(BatonError) -> ArtifactPiece? { nil }

    /// A history that keeps no output chunks (or no index of them) cannot search them, and says so.
    public func search(_ text: String, _ filter: HistoryFilter, stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult {
        throw .badRequest("search needs batond's SQLite history: this history keeps no searchable output")
    }
}
