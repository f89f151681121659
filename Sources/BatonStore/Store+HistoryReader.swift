import BatonCore

extension Store: HistoryReader {
    public func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] {
        try await query { try $0.runs(filter) }
    }

    public func run(_ id: Int64) async throws(BatonError) -> RunDetail? {
        try await query { try $0.run(id) }
    }

    public func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] {
        try await query { try $0.stats(actions: actions, since: since) }
    }

    public func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] {
        try await query { try $0.denied(limit: limit) }
    }

    public func lastEnded() async throws(BatonError) -> [RunSnapshot] {
        try await query { try $0.lastEnded() }
    }

    public func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] {
        try await query { try $0.recentDurations(of: actions) }
    }

    public func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage? {
        try await query { try $0.output(of: run, from: offset, maxBytes: maxBytes) }
    }

    public func started(_ action: String, since: Timestamp) async throws(BatonError) -> [RunSnapshot] {
        try await query { try $0.started(action, since: since) }
    }

    public func events(_ filter: HistoryFilter) async throws(BatonError) -> [ActionEvent] {
        try await query { try $0.events(filter) }
    }

    /// On the search connection (`Store.searching`): a long scan never holds up other reads.
    public func search(_ text: String, _ filter: HistoryFilter, stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult {
        try await query(searching: true) { try $0.search(text, filter, stop: stop) }
    }

    public func artifacts(of run: Int64) async throws(BatonError) -> ArtifactList {
        try await query { try $0.artifacts(of: run) }
    }

    public func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) async throws(BatonError) -> ArtifactPiece? {
        try await query { try $0.artifact(of: run, named: name, from: offset, maxBytes: maxBytes) }
    }

    public func transitions(after cursor: WatchCursor, action: String?, limit: Int) async throws(BatonError) -> Replay {
        try await query { try $0.transitions(after: cursor, action: action, limit: limit) }
    }

    /// A read whose failure says which file could not be read and why, without the SQL.
    private func query<T: Sendable>(searching: Bool = false, _ body: @escaping @Sendable (History) throws -> T) async throws(BatonError) -> T {
        do {
            return try await read(searching: searching, body)
        } catch let error as BatonError {
            throw error
        } catch let error as DatabaseError {
            throw .historyUnreadable("\(path): \(error.message)")
        } catch {
            throw .historyUnreadable("\(path): \(error)")
        }
    }
}
