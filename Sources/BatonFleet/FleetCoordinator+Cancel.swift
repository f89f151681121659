import BatonCore
import Foundation

extension FleetCoordinator {
    /// Cancels runs wherever they run: this host's conductor stops its own; a queued run of any
    /// host ends at once; a loading or retrying run of another host is marked, and its owner
    /// stops it (answered as it is now: still loading while its processes stop).
    public func cancel(_ target: ConductorState.CancelTarget, by peer: Peer?,
                       answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void) {
        Self.work.async { [self] in
            do {
                let ids: [Int64] = switch target {
                case let .run(id): [id]
                case let .action(name, key):
                    try pool.with { db in
                        try db.query("""
                            SELECT id FROM runs WHERE action = $1 AND ($2::text IS NULL OR key = $2)
                              AND phase IN ('queued', 'loading', 'retrying') ORDER BY id
                            """, [name, key]).rows.compactMap { $0[0].flatMap { Int64($0) } }
                    }
                }
                var runs: [RunSnapshot] = []
                for id in ids {
                    if let run = try cancel(id, by: peer?.uid) { runs.append(run) } else if case .run = target { throw BatonError.unknownRun(id) }
                }
                answered(.success(runs))
            } catch let error as BatonError {
                answered(.failure(error))
            } catch {
                answered(.failure(.storeUnavailable("PostgreSQL: \(error)")))
            }
        }
    }

    /// Cancels one run; nil when it has ended (or never was).
    private func cancel(_ id: Int64, by uid: UInt32?) throws -> RunSnapshot? {
        if adopted.withLock({ $0[id] != nil }), conductor.snapshot(of: id) != nil {
            let done = DispatchSemaphore(value: 0)
            let result = Locked<Result<[RunSnapshot], BatonError>?>(nil)
            conductor.cancel(.run(id), by: uid.map { Peer(uid: $0, gid: 0, pid: 0) }) { outcome in
                result.withLock { $0 = outcome }
                done.signal()
            }
            done.wait()
            return try result.withLock { $0 }?.get().first.map(withHost)
        }
        return try pool.with { db in
            try Self.retrying {
                try db.transaction { () throws -> RunSnapshot? in
                    try db.query("SELECT pg_advisory_xact_lock($1)", [String(FleetSchema.Lock.write.rawValue)])
                    guard let (run, _) = try read(id, on: db), !run.phase.isTerminal else { return nil }
                    _ = try stop(id, .cancelled(by: uid), on: db)
                    try db.execute("NOTIFY baton")
                    return try read(id, on: db)?.0
                }
            }
        }
    }
}
