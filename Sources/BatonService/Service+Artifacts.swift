import BatonCore

/// The `artifacts` and `artifact` ops: a run's kept files, listed, and read a piece at a time,
/// under the same access as its output (read permission on its action). Only a host that defines
/// the run's action serves them: elsewhere (another fleet host, an action since removed) its
/// `access` rules are unknown, and the global ones alone could let in whom the action's keep out.
extension Service {
    func artifacts(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        let run = try await readableRun(request, generation, connection.peer)
        var response = Response(id: request.id)
        response.artifacts = try await history.artifacts(of: run)
        return response
    }

    func artifact(_ request: Request, _ generation: Generation, _ connection: any Caller) async throws(BatonError) -> Response {
        guard let name = request.name, !name.isEmpty else { throw .badRequest("artifact needs \"name\": the file's name, as `artifacts` lists it") }
        let run = try await readableRun(request, generation, connection.peer)
        guard let piece = try await history.artifact(of: run, named: name, from: max(request.from ?? 0, 0), maxBytes: ArtifactPiece.maxBytes) else {
            throw .badRequest("run \(run) kept no artifact named \(Action.quoted(name))")
        }
        var response = Response(id: request.id)
        response.piece = piece
        return response
    }

    /// The run asked for, once the peer may read its action (as for its output), an action this
    /// host defines (fail closed: refused otherwise, whoever asks).
    private func readableRun(_ request: Request, _ generation: Generation, _ peer: Peer) async throws(BatonError) -> Int64 {
        guard let id = request.run else { throw .badRequest("\(request.op.rawValue) needs \"run\"") }
        guard let detail = try await history.run(id) else { throw .unknownRun(id) }
        guard generation.actions[detail.run.action] != nil else {
            throw .forbidden("run \(id)'s action \(Action.quoted(detail.run.action)) is not configured on this host: "
                             + "its artifacts are served only by a host that defines it (and its access rules)")
        }
        try await require(.read, detail.run.action, generation, request, peer)
        return id
    }
}
