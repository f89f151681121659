import Synchronization

/// The actions a conductor was configured with before a reload, for a dispatcher whose runs outlive
/// its flights (a fleet's queued rows): kept under the conductor's one lock with the actions of now
/// (`Shared`), only where `Options.keepsEarlierActions` asks, and only until `forgetEarlier`. One
/// machine keeps none: its queued runs hold their `Action` in their flights.
extension Conductor.Shared {
    /// Keeps each configured action that `next` replaces (with any other definition) or removes,
    /// once each; a registered (in-process) one stays registered and is not kept.
    mutating func keepEarlier(replacedBy next: [String: Action]) {
        for (name, old) in actions where closures[name] == nil && next[name] != old && !(earlier[name] ?? []).contains(old) {
            earlier[name, default: []].append(old)
        }
    }
}

extension Conductor {
    /// The actions named `name` that reloads replaced or removed and this conductor still keeps
    /// (`Options.keepsEarlierActions`), oldest first; none where it keeps none.
    public func earlierActions(named name: String) -> [Action] { shared.withLock { $0.earlier[name] ?? [] } }

    /// Every action kept from before a reload (`earlierActions(named:)`).
    public func earlierActions() -> [Action] { shared.withLock { $0.earlier.values.flatMap(\.self) } }

    /// Drops `actions` from those kept from before a reload: once no unfinished run of theirs is left.
    public func forgetEarlier(_ actions: [Action]) {
        guard !actions.isEmpty else { return }
        shared.withLock { shared in
            let before = shared.earlier
            for action in actions {
                shared.earlier[action.name]?.removeAll { $0 == action }
                if shared.earlier[action.name]?.isEmpty == true { shared.earlier[action.name] = nil }
            }
            if shared.earlier != before { shared.loaded += 1 }
        }
    }

    /// Changes each time what this conductor has loaded changes: its actions replaced (a reload), an
    /// in-process action registered, or earlier actions forgotten. What was decided from the actions
    /// loaded before (a fleet connection's definitions looked up, `FleetRunDefinitions.Cache`) is
    /// decided again after.
    public var loadedGeneration: Int { shared.withLock { $0.loaded } }
}
