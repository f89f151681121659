import BatonCore

extension FleetCoordinator {
    /// Wakes this host when its debounced run `id` may be due: after `wait`, a look at what may
    /// start (`lookForStarts`, on the pool), which starts the run if its window has passed by
    /// the database's clock under its key's lock, or arms the timer again for what is left
    /// (another host's trigger pushed the deadline back). One timer per run (`CoordinatorState`):
    /// a run armed already keeps its timer (its deadline only moves later, and that timer
    /// re-arms when it fires). The feed's once-a-second look is the backstop.
    func armDebounce(_ id: Int64, after wait: Duration) {
        reactor.onLoop { [self] in send(.debounce(id, after: wait)) }
    }

    /// Arms a timer for each of this host's queued runs that hold their key and wait for their
    /// window: a run created here, one taken over from a lost host, one whose timer fired before
    /// another host's trigger pushed its deadline back.
    func armDebounce(on db: PGConnection) throws {
        for row in try db.query(FleetDebounce.waiting(incarnation: host.incarnation)).rows {
            guard let id = row[0].flatMap({ Int64($0) }), let deadline = row[1].flatMap({ Int64($0) }), let now = row[2].flatMap({ Int64($0) }),
                  let left = DebounceWindow.left(deadline: Timestamp(rawValue: deadline), at: Timestamp(rawValue: now)) else { continue }
            armDebounce(id, after: left)
        }
    }
}
