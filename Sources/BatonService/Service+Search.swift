import BatonCore

extension Service {
    /// The runs whose kept output or param values hold `text`, among those the filter selects,
    /// newest first, each with its matching lines; only runs of actions the peer may read.
    func search(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        guard let text = request.text, !text.isEmpty else { throw .badRequest("search needs \"text\": what to look for") }
        var filter = request.filter ?? HistoryFilter(limit: 20)
        if let action = request.action { filter.actions = [action] }
        guard filter.limit <= SearchMatch.maxRuns else {
            throw .badRequest("filter.limit must be from 0 to \(SearchMatch.maxRuns) for a search, got \(filter.limit)")
        }
        for name in filter.actions where generation.actions[name] == nil {
            // An action a reload removed still has its history; one never seen is a typo.
            if try await history.runs(HistoryFilter(actions: [name], limit: 1)).isEmpty { throw .unknownAction(name) }
        }
        if filter.actions.isEmpty {
            // A peer that may read only some actions searches those, so that runs it may not see
            // do not take the places of runs it may.
            let visible = readable(generation.actions.keys, generation, connection.peer)
            if visible.isEmpty, !generation.actions.isEmpty { return Response(id: request.id).with(matches: []) }
            if visible.count < generation.actions.count { filter.actions = visible.sorted() }
        }
        // A client that goes stops its search: nobody would read the answer.
        let found = try await history.search(text, filter, stop: { [connection] in connection.isClosed })
        let visible = readable(found.matches.map(\.run.action), generation, connection.peer)
        var response = Response(id: request.id)
        response.matches = found.matches.filter { visible.contains($0.run.action) }
        response.searchCut = found.cut
        return response
    }
}

extension Response {
    fileprivate func with(matches: [SearchMatch]) -> Response {
        var response = self
        response.matches = matches
        return response
    }
}
