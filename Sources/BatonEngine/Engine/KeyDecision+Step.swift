/// One trigger a store decides alone, from the rows it read while it holds its key (a fleet
/// hook's trigger): the engine's one step for it, as `KeyDecision.batch` is for a batch. The store
/// reads the key's facts and, for a `replace`, the facts of the runs it may stop (the key's holder
/// and line) up front, calls `step` once (which takes a run id, `id`, only where it makes one)
/// and performs what it answers: the decision, the key's slot as the step left it, and the
/// stops the replace asked (`RunStop`, decided on the stopped runs' facts: a queued one has
/// ended and left the slot, one with an attempt is its owner's).
extension KeyDecision {
    public struct Step: Sendable, Equatable {
        public var decision: KeyDecision
        /// The key's slot as the step left it (a queued run the replace stopped has left it).
        public var slot: KeySlot
        /// The stops the replace asked, in order (none where the decision is no replace).
        public var stops: [RunStop]

        public init(decision: KeyDecision, slot: KeySlot, stops: [RunStop] = []) {
            self.decision = decision
            self.slot = slot
            self.stops = stops
        }
    }

    /// Decides `asked` on `facts` (`decide`), once; a new run takes `id`, which is asked only when
    /// the step makes one, and may throw (a store that takes it in a round trip). A replace's stops are decided
    /// on `stopping`, the facts of the runs it stops, stamped `stamp` (the store's clock), `me`
    /// being the store's own owner name.
    public static func step(_ asked: Asked, _ facts: KeyFacts, stopping: [Int64: KeyFacts.Run], me: String, id: () throws -> Int64,
                            at stamp: Timestamp, fingerprint: () -> String) rethrows -> Step {
        var slot = facts.slot
        let decision = try decide(asked, facts, slot: &slot, candidate: id, fingerprint: fingerprint)
        guard case let .created(.replaced(run, ids), _) = decision else { return Step(decision: decision, slot: slot) }
        let stops = RunStop.decide(ids, .replaced(by: run), stopping, slot: &slot, me: me, at: stamp)
        return Step(decision: decision, slot: slot, stops: stops)
    }

    /// The same with the asked action's own fingerprint.
    public static func step(_ asked: Asked, _ facts: KeyFacts, stopping: [Int64: KeyFacts.Run], me: String, id: () throws -> Int64,
                            at stamp: Timestamp) rethrows -> Step {
        try step(asked, facts, stopping: stopping, me: me, id: id, at: stamp, fingerprint: { asked.action.fingerprint })
    }

    /// The runs a replace of `asked` on `slot` may stop, whose facts `step` needs: the holder and
    /// its line (`KeySlot.trigger`); none for another policy or a free key.
    public static func mayStop(_ asked: Asked, slot: KeySlot) -> [Int64] {
        guard asked.policy == .replace, let holder = slot.holder else { return [] }
        return [holder] + slot.line
    }
}

extension ApprovalState {
    /// What a decided wait does to run `run`, as one engine step: nothing for an approval, else
    /// the stop that ends it `cancelled` (`stop(timeout:queuedAt:)`) decided on the run's facts as
    /// any stop is (`RunStop`): a queued run ends now and leaves its key's `slot`. `me`: the
    /// store's own owner name; `now`: the stop's stamp.
    public func end(of run: Int64, _ facts: KeyFacts.Run?, slot: inout KeySlot, timeout: Duration?, queuedAt: Timestamp, me: String,
                    at now: Timestamp) -> RunStop? {
        guard let stop = stop(timeout: timeout, queuedAt: queuedAt) else { return nil }
        return RunStop.decide(run, stop, facts, slot: &slot, me: me, at: now)
    }
}
