extension FleetJournal {
    /// Where a new run's origin (`runs.origin_uid`, schema 26: who may not approve it) comes from,
    /// decided at its creation as the engine decides it: a trigger's uid, or the origin the run
    /// whose hook or need made it passes on (`ConductorState.origin(kept:trigger:)`), read from
    /// that one row: no walk up a chain.
    enum Origin: Equatable, Sendable {
        case uid(UInt32?)
        case parent(Int64)

        /// The value's SQL, its parameter `$n`.
        func sql(_ n: Int) -> String {
            switch self {
            case .uid: "$\(n)"
            case .parent: "(SELECT coalesce(p.origin_uid, p.trigger_uid) FROM runs p WHERE p.id = $\(n))"
            }
        }

        var parameter: String? {
            switch self {
            case let .uid(uid): FleetRows.text(uid)
            case let .parent(run): String(run)
            }
        }
    }
}
