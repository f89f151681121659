import BatonCore
import FoundationEssentials

/// Connections to one database, each a `PGWorker` (a connection and the one thread that uses
/// it). Work goes to an idle connection, or to a new one while there are fewer than `limit`,
/// else to the one with the least work waiting; nobody blocks for a connection.
public final class PGPool: Sendable {
    public let conninfo: String
    let defaults: [String: String]
    private let limit: Int
    private let workers = Locked<[PGWorker]>([])

    public init(conninfo: String, defaults: [String: String], limit: Int = 8) {
        self.conninfo = conninfo
        self.defaults = defaults
        self.limit = max(limit, 1)
    }

    /// Runs `work` on one of the pool's connections; `completion` is called on its thread.
    public func submit<T>(_ work: @escaping @Sendable (PGConnection) throws -> T,
                          completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        pick().submit(work, completion: completion)
    }

    /// Runs `work` on one of the pool's connections and returns what it returned.
    public func run<T: Sendable>(_ work: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pick().run(work)
    }

    /// Runs a read on one of the pool's connections: once more on a new connection when the one
    /// it found had broken meanwhile (after a server restart every idle connection has).
    public func read<T: Sendable>(_ work: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pick().run(work, retryingBroken: true)
    }

    /// A connection of its own, outside the pool (the lease's), whose thread ends after `idleTimeout` idle.
    public func dedicated(name: String, idleTimeout: Duration = .seconds(10)) -> PGWorker {
        PGWorker(name: name, conninfo: conninfo, defaults: defaults, idleTimeout: idleTimeout)
    }

    private func pick() -> PGWorker {
        workers.withLock { workers in
            let loads = workers.map(\.load)
            if let idle = loads.firstIndex(of: 0) { return workers[idle] }
            guard workers.count >= limit else {
                let worker = dedicated(name: "baton-pg-\(workers.count + 1)")
                workers.append(worker)
                return worker
            }
            return workers[loads.indices.min { loads[$0] < loads[$1] } ?? 0]
        }
    }

    /// Runs what is queued on every connection (at most `timeout` each), then closes them.
    public func close(timeout: Duration = .seconds(5)) {
        for worker in workers.withLock({ $0 }) { worker.close(timeout: timeout) }
    }
}
