import BatonCore
import FoundationEssentials

extension FleetCoordinator {
    typealias CancelAnswer = @Sendable (Result<[RunSnapshot], BatonError>) -> Void

    /// Cancels runs wherever they run: this host's conductor stops its own; a queued run of any
    /// host ends at once; a loading or retrying run of another host is marked, and its owner
    /// stops it (answered as it is now: still loading while its processes stop). One run after
    /// the other, each in a completion of the one before.
    public func cancel(_ target: ConductorState.CancelTarget, by peer: Peer?,
                       answered: @escaping @Sendable (Result<[RunSnapshot], BatonError>) -> Void) {
        switch target {
        case let .run(id):
            cancel([id], from: 0, done: [], single: true, by: peer, answered: answered)
        case let .action(name, key):
            pool.submit({ db in
                try db.query("""
                    SELECT id FROM runs WHERE action = $1 AND ($2::text IS NULL OR key = $2)
                      AND phase IN ('queued', 'loading', 'retrying') ORDER BY id
                    """, [name, key]).rows.compactMap { $0[0].flatMap { Int64($0) } }
            }) { [self] result in
                switch result {
                case let .success(ids): cancel(ids, from: 0, done: [], single: false, by: peer, answered: answered)
                case let .failure(error): answered(.failure(Self.batonError(error)))
                }
            }
        }
    }

    /// Cancels `ids[index...]`, then answers with every run cancelled. A single run that has
    /// ended (or never was) is `unknownRun`.
    private func cancel(_ ids: [Int64], from index: Int, done: [RunSnapshot], single: Bool, by peer: Peer?,
                        answered: @escaping CancelAnswer) {
        guard index < ids.count else { return answered(.success(done)) }
        cancel(ids[index], by: peer) { [self] result in
            switch result {
            case let .success(run?): cancel(ids, from: index + 1, done: done + [run], single: single, by: peer, answered: answered)
            case .success(nil) where single: answered(.failure(.unknownRun(ids[index])))
            case .success(nil): cancel(ids, from: index + 1, done: done, single: single, by: peer, answered: answered)
            case let .failure(error): answered(.failure(error))
            }
        }
    }

    /// Cancels one run; nil when it has ended (or never was).
    private func cancel(_ id: Int64, by peer: Peer?, answered: @escaping @Sendable (Result<RunSnapshot?, BatonError>) -> Void) {
        if runsHere(id) {
            return conductor.cancel(.run(id), by: peer) { [self] outcome in
                answered(outcome.map { $0.first.map(withHost) })
            }
        }
        pool.submit({ [self] db in
            try Self.retrying {
                // The run's key's slot row first: a queued run ends here, and its key's transitions stay in order.
                try db.transaction(opening: [FleetJournal.lockKeys(runs: [id])]) { _ throws -> RunSnapshot? in
                    guard let (run, _) = try read(id, on: db), !run.phase.isTerminal,
                          let key = try FleetStop.slot(ofRun: id, on: db) else { return nil }
                    var slot = key.slot
                    _ = try FleetStop.perform([id], .cancelled(by: peer?.uid, principal: peer?.principal), slot: &slot, on: db, me: host.incarnation)
                    if slot != key.slot { try FleetJournal.store(slot, key: key.key, on: db) }
                    try db.execute("NOTIFY baton")
                    return try read(id, on: db)?.0
                }
            }
        }) { result in answered(result.mapError(Self.batonError)) }
    }

    /// A failure as the caller hears it: Baton's own errors as they are, the rest naming PostgreSQL.
    static func batonError(_ error: any Error) -> BatonError {
        error as? BatonError ?? .storeUnavailable("PostgreSQL: \(error)")
    }
}
