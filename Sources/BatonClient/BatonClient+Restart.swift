import BatonCore

extension BatonClient {
    /// Waits for run `run` to end on connections of its own, riding out a restart of batond
    /// (docs/architecture.md, "Restart in place"): a connection lost before the end is made again,
    /// and the wait asked again, while batond cannot be reached for at most `bound` in a row (a
    /// restart in place keeps the socket: the new batond answers from its backlog; a stop and
    /// start under systemd refuses for a moment). Updates go to `updates` as they come, on every
    /// connection (the first of each is the run as it is then).
    public static func wait(run: Int64, socket: String?, reconnectingFor bound: Duration = .seconds(30),
                            updates: @escaping @Sendable (RunUpdate) -> Void = { _ in }) async throws -> RunSnapshot {
        let clock = ContinuousClock()
        var reached = clock.now
        while true {
            do {
                let client = try BatonClient(socket: socket)
                reached = clock.now
                return try await client.wait(run: run, updates: updates)
            } catch let error as BatonClientError {
                switch error {
                case .unavailable, .restarting: guard clock.now - reached < bound else { throw error }
                default: throw error
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
