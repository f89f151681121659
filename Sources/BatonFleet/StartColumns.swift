import BatonCore

/// The fleet's start rows, defined once: every start path (a look's batch, `startable(_:)`; the
/// starts in the writer's transaction after ends, `startable(keys:)`) reads a queued run with the
/// facts its start is decided on through this SELECT list, decodes them into the engine's
/// `KeyDecision.StartView` here, and lets `KeyDecision.mayStart` decide, as one machine's
/// `FlightTable` does. `filter` is the cheap pre-filter the looks' queries add, written once:
/// it keeps exactly the rows whose view the rule starts (each clause is the SQL of one of the
/// view's facts: see its comment), so the rule still decides every run a start reads.
enum StartColumns {
    enum Part: Hashable, Sendable {
        case seq, slot, windowPassed, pause, approving, rateHeld, needs
    }

    /// The list, as `r` (runs), `k` (its key), `p` (its action's pause) and `a` (its approval);
    /// `$2` is this host's incarnation (a debounce window passes only for its owner).
    static let select = FleetSelect<Part>(run: "r", [
        (.seq, ["r.last_seq"]),
        (.slot, ["k.holder", "k.follow_up", "k.draining"]),
        (.windowPassed, ["(r.incarnation = $2 AND \(FleetDebounce.due))"]),
        (.pause, FleetPauses.joinedList),
        (.approving, [FleetApprovals.waiting]),
        (.rateHeld, [FleetRates.held]),
        (.needs, ["r.needs"]),
    ])

    /// The tables `select` reads; `keys` joined on the run's key only (`filter` says whether it holds it).
    static let from = """
        FROM runs r JOIN keys k ON k.key = r.key LEFT JOIN pauses p ON p.action = r.action LEFT JOIN approvals a ON a.run_id = r.id
        """

    /// The rule as a WHERE clause over `r` and `k` (`r`'s incarnation checked by the query): the
    /// run is queued (`phase`), holds its key with nothing draining (`slot.startable`), its window
    /// passed (`FleetDebounce.due`), its action's pause does not hold (`FleetPauses.holds`: the
    /// same comparison as `ActionPause.holds(at:)`), its rate limit does not hold it
    /// (`FleetRates.held`, the `rateHeld` column itself), it waits for no approval
    /// (`FleetApprovals.waits`: an approval row, one per run, undecided) and its needs are met.
    static let filter = """
        r.phase = 'queued' AND k.holder = r.id AND cardinality(k.draining) = 0 AND \(FleetDebounce.due) AND NOT \(FleetPauses.holds)
          AND NOT \(FleetRates.held) AND NOT \(FleetApprovals.waits) AND \(FleetNeeds.met)
        """

    /// A start row decoded: the run, its last seq, and what its start is decided on.
    struct Row: Sendable {
        var run: RunSnapshot
        var seq: Int
        var view: KeyDecision.StartView

        var verdict: KeyDecision.StartVerdict { KeyDecision.mayStart(view) }
    }

    static func decode(_ row: [String?]) -> Row {
        let run = FleetRows.run(row)
        let needs: KeyDecision.StartView.Needs = switch select.value(row, .needs) {
        case .none, .some("met"): .met
        case .some("failed"): .failed
        default: .waiting
        }
        let view = KeyDecision.StartView(
            run: run.id, phase: run.phase, slot: KeySlot(row: select.columns(row, .slot)),
            windowPassed: select.value(row, .windowPassed) == "t", paused: FleetPauses.holds(row, from: select.range(.pause).lowerBound),
            rateHeld: select.value(row, .rateHeld) == "t", approving: select.value(row, .approving) == "t", needs: needs)
        return Row(run: run, seq: Int(select.value(row, .seq) ?? "") ?? 1, view: view)
    }
}
