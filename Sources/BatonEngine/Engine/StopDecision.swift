/// How a stop (a replace, a cancel) reaches a run known by its row rather than by a machine in
/// hand: the fleet's runs, which any host may stop and only one host runs. The rule is the
/// engine's, the one `RunMachine` applies on one machine, so a stop means the same on both:
///
/// - a queued run has no attempt: it ends at once, whoever holds its key, with the transition its
///   machine records for the stop (the same phase and detail, one seq after its last);
/// - a run with an attempt (loading, or retrying between attempts) is its owner's: the stop is
///   left for the owner's machine, which ends it as one machine does (`here`: this host owns it);
/// - a run that has ended needs nothing.
public enum StopDecision: Sendable, Equatable {
    /// It has ended (or never was): nothing to do.
    case none
    /// A queued run ends now with this transition; its key's slot forgets it (`KeySlot.ended`).
    case ends(Transition)
    /// Its attempt's owner stops it (marked for it); `here`: this host is the owner.
    case owner(here: Bool)

    /// Decides `stop` for run `run`, now in `phase` after transition `lastSeq`, at `now`.
    public static func decide(_ stop: RunMachine.Stop, run: Int64, phase: Phase, lastSeq: Int, ownedHere: Bool,
                              at now: Timestamp) -> StopDecision {
        switch phase {
        case .queued:
            var machine = RunMachine(retries: 0)
            for case let .record(ended, detail) in machine.handle(.stop(stop)) {
                return .ends(Transition(runID: run, seq: lastSeq + 1, from: .queued, to: ended, at: now, detail: detail))
            }
            return .none
        case .loading, .retrying:
            return .owner(here: ownedHere)
        case .success, .failure, .cancelled:
            return .none
        }
    }

    /// Decides `stop` for run `run` on what its store read of it (`KeyFacts.Run`), `me` being the
    /// store's own owner name; a queued run that ends leaves its key's `slot` (`KeySlot.ended`),
    /// as one machine's table forgets it. Nil: no such run.
    public static func decide(_ stop: RunMachine.Stop, run: Int64, _ facts: KeyFacts.Run?, me: String, slot: inout KeySlot,
                              at now: Timestamp) -> StopDecision? {
        guard let facts else { return nil }
        let decision = decide(stop, run: run, phase: facts.phase, lastSeq: facts.lastSeq, ownedHere: facts.owner == me, at: now)
        if case .ends = decision { slot.ended(run) }
        return decision
    }
}

/// One stop of a run for another, decided (a replace in a trigger batch or a hook, a cancel): the
/// run, why, and the engine's decision on its facts. A store writes it its own way (the fleet:
/// `FleetStop`'s statements).
public struct RunStop: Sendable, Equatable {
    public var run: Int64
    public var stop: RunMachine.Stop
    public var decision: StopDecision

    public init(run: Int64, stop: RunMachine.Stop, decision: StopDecision) {
        self.run = run
        self.stop = stop
        self.decision = decision
    }

    /// Decides `stop` for `run` on its facts (nil: no such run, or nothing to do): `StopDecision`,
    /// which takes a queued run that ends out of `slot`. `me`: the store's own owner name.
    public static func decide(_ run: Int64, _ stop: RunMachine.Stop, _ facts: KeyFacts.Run?, slot: inout KeySlot, me: String,
                              at now: Timestamp) -> RunStop? {
        guard let decision = StopDecision.decide(stop, run: run, facts, me: me, slot: &slot, at: now), decision != .none else { return nil }
        return RunStop(run: run, stop: stop, decision: decision)
    }

    /// Decides `stop` for each of `ids` in order on `facts` (the runs' rows, read while their key's
    /// row is held), `slot` being that key's slot: the queued ones leave it.
    public static func decide(_ ids: [Int64], _ stop: RunMachine.Stop, _ facts: [Int64: KeyFacts.Run], slot: inout KeySlot, me: String,
                              at now: Timestamp) -> [RunStop] {
        ids.compactMap { decide($0, stop, facts[$0], slot: &slot, me: me, at: now) }
    }

    /// Whether the store's own host runs it, and stops it itself once the stop commits.
    public var here: Bool { decision == .owner(here: true) }

    /// The end it writes, when it ends a queued run now.
    public var end: Transition? {
        if case let .ends(end) = decision { return end }
        return nil
    }
}
