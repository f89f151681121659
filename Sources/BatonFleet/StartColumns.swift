import BatonCore

/// The fleet's start rows, defined once: every start path (a look's batch, `startable(_:)`; the
/// starts in the writer's transaction after ends, `startable(keys:)`) reads a queued run with the
/// facts its start is decided on through this SELECT list, as kept (its owner, its window's
/// deadline, its action's pause, its rate hold, the database's clock: no comparison is made
/// here), decodes them into the engine's `KeyDecision.Starts.Row` here, and lets the engine's
/// start step decide (`KeyDecision.starts`: the start rule, `mayStart`, as one machine's
/// `FlightTable` asks it, with the windows' arithmetic). `filter` is the cheap pre-filter the
/// looks' queries add, written once: it keeps exactly the rows whose view the rule starts (each
/// clause is the SQL of one of the view's facts: see its comment), so the rule still decides
/// every run a start reads. `StartRowFilterTests` holds it to that: rows for every value of every
/// fact of the view, each expected as the rule decides the view it states.
enum StartColumns {
    enum Part: Hashable, Sendable {
        case seq, slot, owner, pause, clock, approving, needs, definition
    }

    /// The list, as `r` (runs), `k` (its key), `p` (its action's pause) and `a` (its approval);
    /// the run's window deadline and rate hold are its own columns (`debounce_until`, `rate_until`).
    static let select = FleetSelect<Part>(run: "r", [
        (.seq, ["r.last_seq"]),
        (.slot, ["k.holder", "k.follow_up", "k.draining"]),
        (.owner, ["r.incarnation"]),
        (.pause, FleetPauses.columnList.map { "p." + $0 }),
        (.clock, [FleetCooldown.databaseNow]),
        (.approving, [FleetApprovals.waiting]),
        (.needs, ["r.needs"]),
        (.definition, DefinitionRef.columns("r")),
    ])

    /// The tables `select` reads; `keys` joined on the run's key only (`filter` says whether it holds it).
    static let from = """
        FROM runs r JOIN keys k ON k.key = r.key LEFT JOIN pauses p ON p.action = r.action LEFT JOIN approvals a ON a.run_id = r.id
        """

    /// The rule as a WHERE clause over `r` and `k` (`r`'s incarnation checked by the query): the
    /// run is queued (`phase`), holds its key with nothing draining (`slot.startable`), its window
    /// passed (`FleetDebounce.due`: `DebounceWindow.passed`), its action's pause does not hold
    /// (`FleetPauses.holds`: the same comparison as `ActionPause.holds(at:)`), its rate limit does
    /// not hold it (`FleetRates.held`: a `rate_until` to come), it waits for no approval
    /// (`FleetApprovals.waits`: an approval row, one per run, undecided) and its needs are met.
    static let filter = """
        r.phase = 'queued' AND k.holder = r.id AND cardinality(k.draining) = 0 AND \(FleetDebounce.due) AND NOT \(FleetPauses.holds)
          AND NOT \(FleetRates.held) AND NOT \(FleetApprovals.waits) AND \(FleetNeeds.met)
        """

    /// A start row decoded: the run, its last seq, and its facts as the engine's start step reads them.
    struct Row: Sendable {
        var run: RunSnapshot
        var seq: Int
        var facts: KeyDecision.Starts.Row
        /// The definition it was triggered with (`FleetCoordinator.definition`).
        var definition: DefinitionRef

        /// The start rule's verdict on the row, for this host's incarnation `me`.
        func verdict(me: String) -> KeyDecision.StartVerdict { facts.verdict(me: me) }
    }

    /// The row's facts leave its rate limit to the caller (`Starts.Row.rate`: its action's, as
    /// this host has it). Throws when the database's clock is not in the row (every window and
    /// hold is compared with it: read as 0, each would hold, and the run silently not start),
    /// as `readBuckets` does.
    static func decode(_ row: [String?]) throws -> Row {
        let run = FleetRows.run(row)
        let needs: KeyDecision.StartView.Needs = switch select.value(row, .needs) {
        case .none, .some("met"): .met
        case .some("failed"): .failed
        default: .waiting
        }
        guard let clock = select.value(row, .clock).flatMap({ Int64($0) }) else {
            throw PGError(message: "the database's clock could not be read in run \(run.id)'s start row")
        }
        let facts = KeyDecision.Starts.Row(
            run: run.id, phase: run.phase, slot: KeySlot(row: select.columns(row, .slot)), owner: select.value(row, .owner),
            window: run.debounceUntil, pause: FleetPauses.pause(row, from: select.range(.pause).lowerBound),
            approving: select.value(row, .approving) == "t", rateUntil: run.rateUntil, needs: needs, startedBefore: run.startedAt != nil,
            now: Timestamp(rawValue: clock))
        return Row(run: run, seq: Int(select.value(row, .seq) ?? "") ?? 1, facts: facts, definition: DefinitionRef(select.columns(row, .definition)))
    }
}
