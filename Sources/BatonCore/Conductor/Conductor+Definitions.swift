/// The definitions a run was triggered with: a reload does not change a run's action (the host's
/// flights keep theirs), and a fleet, which reads its queued runs back from their rows, finds
/// theirs here by the fingerprint each row keeps (`runs.definition`).
extension Conductor {
    /// The action `name` as defined by `fingerprint`: the definition this process loaded with
    /// that fingerprint before a reload changed it, else the action as configured now (a run
    /// with no fingerprint, or one this process never loaded: another host's, or one from before
    /// a restart, which recovery gives the definition loaded now, as one machine's does). Nil
    /// when `name` is no longer configured: such a run does not start.
    public func action(named name: String, definition fingerprint: String?) -> Action? {
        shared.withLock { registry in
            guard let current = registry.actions[name] else { return nil }
            guard let fingerprint, let kept = registry.definitions[name]?[fingerprint] else { return current }
            return kept
        }
    }

    /// At a reload, under the registry's lock: every configured action whose definition `next`
    /// changes keeps its old and its new definition by fingerprint (a fingerprint's definition
    /// never changes; the new one is kept too, so that a run of it after a later reload finds
    /// it). Fields the fingerprint leaves out (description, output.keep...) are the newest
    /// loaded with that fingerprint.
    static func keepDefinitions(_ registry: inout Shared, next: [String: Action]) {
        for (name, old) in registry.actions where registry.closures[name] == nil {
            guard let new = next[name], new != old else { continue }
            registry.definitions[name, default: [:]][old.fingerprint] = old
            registry.definitions[name, default: [:]][new.fingerprint] = new
        }
    }
}
