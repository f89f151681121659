import BatonCore

/// The rows of the feed's catch-up (`FleetFeed.catchUpQuery`, after its target column), defined
/// once: the run's columns, then the transition's (its id first) and the run's last seq. The SQL
/// and the reads come from the same `FleetSelect`, so a column added to the run's list or to a
/// part moves every read after it with it (a read by hand position, `row[7...]`, did not).
enum CatchUpColumns {
    enum Part: Hashable, Sendable { case transition, lastSeq }

    /// The transition's columns, its id first, in `FleetRows.transition(runID:_:from:)`'s order after it.
    static let transitionColumns = ["t.id AS transition_id", "t.seq", "t.from_phase", "t.to_phase", "t.at", "t.detail"]

    static let select = FleetSelect<Part>(run: "r", parts)
    static let parts: [(Part, [String])] = [(.transition, transitionColumns), (.lastSeq, ["r.last_seq"])]

    /// A catch-up row decoded: the transition, and its run as it was at it.
    struct Row: Sendable, Equatable {
        /// The transition's row id (the feed's position reads on after it).
        var transitionID: Int64
        var transition: Transition
        /// The run at this transition: where a later one is committed too, its phase, end and
        /// error are this transition's, not the row's.
        var run: RunSnapshot
    }

    static func decode(_ row: [String?], _ select: FleetSelect<Part> = select) -> Row {
        let start = select.range(.transition).lowerBound
        let transition = FleetRows.transition(runID: row[0].flatMap { Int64($0) } ?? 0, row, from: start + 1)
        let later = Int(select.value(row, .lastSeq) ?? "") != transition.seq
        let run = FleetRows.run(row) { run in
            run.seq = transition.seq
            guard later else { return }
            // A later transition is committed too: show the run as it was at this one.
            run.phase = transition.to
            if !transition.to.isTerminal { (run.endedAt, run.reason) = (nil, nil) }
            run.error = transition.detail.error
        }
        return Row(transitionID: Int64(select.value(row, .transition) ?? "") ?? 0, transition: transition, run: run)
    }
}
