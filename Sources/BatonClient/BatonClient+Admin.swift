import BatonCore

extension BatonClient {
    /// The configured actions the peer may read, as `baton actions` lists them.
    public func actions() async throws -> [ActionInfo] {
        try await ask(.actions)
    }

    /// Counts, success rate and duration percentiles per action, of the runs `filter` selects
    /// (its `actions` and `since`).
    public func stats(_ filter: HistoryFilter = HistoryFilter()) async throws -> [ActionStats] {
        try await ask(.stats(filter))
    }

    /// The runs `filter` selects (20 by default) whose kept output or param values hold `text`,
    /// case ignored, newest first, each with its first matching lines and their numbers.
    public func search(_ text: String, _ filter: HistoryFilter = HistoryFilter(limit: 20)) async throws -> [SearchMatch] {
        try await ask(.search(text, filter)).matches
    }

    /// The same, with where the search stopped when it read its most bytes of output
    /// (`SearchMatch.maxScannedBytes`) before it had read all it could.
    public func searchResult(_ text: String, _ filter: HistoryFilter = HistoryFilter(limit: 20)) async throws -> SearchResult {
        try await ask(.search(text, filter))
    }

    /// The actions' pauses and resumes `filter` selects, newest first: who paused which action,
    /// why and until when, and who resumed it.
    public func events(_ filter: HistoryFilter = HistoryFilter()) async throws -> [ActionEvent] {
        try await ask(.events(filter))
    }

    /// The latest requests batond refused for lack of permission, newest first, at most `limit`
    /// (root only: others get `.forbidden`).
    public func denied(limit: Int = 50) async throws -> [TriggerRecord] {
        try await ask(.denied(limit: limit))
    }

    /// batond's metrics in Prometheus' text exposition format, of the actions the peer may read.
    public func metrics() async throws -> String {
        try await ask(.metrics)
    }

    /// Removes the ended runs that retention no longer keeps (with `dryRun`, only counts them).
    public func prune(dryRun: Bool = false) async throws -> PruneReport {
        try await ask(.prune(dryRun: dryRun))
    }

    /// Makes batond read its config again; a config with errors is refused (`.badRequest`, its
    /// message naming the field) and the old one stays. Returns batond's warnings about the config
    /// it applied (a setting that changes only at restart, say).
    @discardableResult
    public func reload() async throws -> [String] {
        try await ask(.reload)
    }
}
