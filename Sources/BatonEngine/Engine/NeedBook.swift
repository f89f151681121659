/// Which runs wait for which (`needs`), as a pure value: each waiting run's needed runs, in its
/// action's order, each with its phase as last known, and the reverse (the runs waiting on each).
/// A waiting run's wait is decided once: when the last of its needed runs succeeds (it may start),
/// when one ends otherwise (it fails without starting), or when one was stopped by a batond's
/// shutdown (it asks that need again). One rule for one machine and a fleet, which both act on it.
public struct NeedBook: Sendable, Equatable {
    /// What a run's wait came to.
    public enum Outcome: Sendable, Equatable {
        /// Every needed run succeeded: it may start.
        case met
        /// A needed run ended other than `success`: it ends `failure` with this error.
        case failed(String)
        /// Needed runs were stopped by a batond's shutdown (`cancelled`, reason `shutdown`), and
        /// none ended otherwise: the run stays queued and asks these needs (their indices, in its
        /// action's order) again, as when it was made. One machine asks at its next start;
        /// a fleet's owner at its next look (`needs = 'asking'`).
        case askAgain([Int])
    }

    /// Each waiting run's needs, as last known.
    public private(set) var waits: [Int64: [NeededRun]] = [:]
    /// The runs waiting on each needed run.
    private var dependents: [Int64: Set<Int64>] = [:]

    public init() {}

    /// What `needs` (as known now) decide for a waiting run: nil while one has not ended.
    /// A need that ended otherwise fails the wait before one stopped by a shutdown is asked again.
    public static func outcome(of needs: [NeededRun]) -> Outcome? {
        if let failed = needs.first(where: { $0.failure != nil && !$0.stoppedByShutdown }) { return .failed(failed.failure!) }
        let stopped = needs.indices.filter { needs[$0].stoppedByShutdown }
        if !stopped.isEmpty { return .askAgain(stopped) }
        return needs.allSatisfy { $0.phase == .success } ? .met : nil
    }

    /// Run `run` waits on `needs`; returns its outcome when they already decide it (then it is not kept).
    public mutating func wait(_ run: Int64, on needs: [NeededRun]) -> Outcome? {
        if let outcome = Self.outcome(of: needs) { return outcome }
        waits[run] = needs
        for need in needs where !need.phase.isTerminal { dependents[need.run, default: []].insert(run) }
        return nil
    }

    /// A needed run's end is decided: the waits it decides, oldest waiting run first.
    public mutating func ended(_ needed: Int64, phase: Phase, reason: String?) -> [(run: Int64, outcome: Outcome)] {
        guard let waiting = dependents.removeValue(forKey: needed) else { return [] }
        var decided: [(Int64, Outcome)] = []
        for run in waiting.sorted() {
            guard var needs = waits[run] else { continue }
            for index in needs.indices where needs[index].run == needed {
                needs[index].phase = phase
                needs[index].reason = reason
            }
            if let outcome = Self.outcome(of: needs) {
                forget(run)
                decided.append((run, outcome))
            } else {
                waits[run] = needs
            }
        }
        return decided
    }

    /// A needed run's phase changed without ending (it started): told to what waits on it.
    public mutating func moved(_ needed: Int64, to phase: Phase) {
        for run in dependents[needed] ?? [] {
            guard var needs = waits[run] else { continue }
            for index in needs.indices where needs[index].run == needed { needs[index].phase = phase }
            waits[run] = needs
        }
    }

    /// A waiting run ended (cancelled, replaced) or is gone: it waits no more. Its needed runs go on.
    public mutating func forget(_ run: Int64) {
        guard let needs = waits.removeValue(forKey: run) else { return }
        for need in needs {
            dependents[need.run]?.remove(run)
            if dependents[need.run]?.isEmpty == true { dependents[need.run] = nil }
        }
    }

    /// The runs waiting on run `needed`, oldest first.
    public func waiting(on needed: Int64) -> [Int64] { (dependents[needed] ?? []).sorted() }

    /// What run `run` waits for, as last known; nil when it waits for nothing.
    public func needs(of run: Int64) -> [NeededRun]? { waits[run] }

    /// Whether run `run` waits for a needed run.
    public func isWaiting(_ run: Int64) -> Bool { waits[run] != nil }
}
