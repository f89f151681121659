/// A trigger batch decided once, before its new runs have ids (`KeyDecision.batch`): a store
/// takes its run ids in one round trip only once it knows how many the batch makes, so the batch
/// numbers its new runs with draft ids, in the order it makes them, and the store's ids replace
/// them after (`taking`). The draft ids sort after every run a store's rows can hold and in the
/// order the runs are made, as the store's own ids do (a sequence taken after the rows were
/// read): the decision asks of ids only whether two are the same run and which is older (a rate
/// limit's held runs start oldest first), so it is the one the store's ids would have made.
extension KeyDecision.Batch {
    public struct Draft: Sendable, Equatable {
        /// The first draft id: far above any run id a store gives.
        public static let first: Int64 = 1 << 62

        /// The decision, its new runs numbered from `first`.
        public let draft: Decided
        /// How many new runs it makes: the ids to take.
        public let ids: Int

        init(_ draft: Decided, ids: Int) {
            self.draft = draft
            self.ids = ids
        }

        /// The decision with the `n`th new run numbered `ids[n]` everywhere it is named: the
        /// outcomes (and a refusal that names a run the batch made), the stops (and the end a
        /// stop records, as decided, its runs numbered), the slots, windows, starts and
        /// definitions. `ids` holds exactly `self.ids` ids.
        public func taking(_ ids: [Int64]) -> Decided {
            precondition(ids.count == self.ids, "a batch is numbered with as many ids as it makes runs")
            let number = { (run: Int64) -> Int64 in run >= Self.first ? ids[Int(run - Self.first)] : run }
            var decided = Decided()
            decided.stamp = draft.stamp
            decided.outcomes = draft.outcomes.map { $0.numbered(number) }
            decided.stops = draft.stops.mapValues { $0.map { $0.numbered(number) } }
            decided.slots = draft.slots.mapValues { $0.numbered(number) }
            decided.windows = Dictionary(uniqueKeysWithValues: draft.windows.map { (number($0.key), $0.value) })
            decided.starts = draft.starts.map(number)
            decided.definitions = Dictionary(uniqueKeysWithValues: draft.definitions.map { (number($0.key), $0.value) })
            return decided
        }
    }
}

extension KeyDecision.Batch.Outcome {
    func numbered(_ number: (Int64) -> Int64) -> Self {
        switch self {
        case let .refused(error): .refused(error.numbered(number))
        case .denied, .needRefused: self
        case let .shared(decision): .shared(decision.numbered(number))
        case let .debounced(run): .debounced(run: number(run))
        case let .created(decision, window): .created(decision.numbered(number), window: window)
        }
    }
}

extension FlightTable.Decision {
    func numbered(_ number: (Int64) -> Int64) -> Self {
        switch self {
        case let .created(run): .created(number(run))
        case let .followUp(run, after): .followUp(number(run), after: number(after))
        case let .joined(run): .joined(number(run))
        case let .coalesced(run): .coalesced(number(run))
        case let .rejected(run, line): .rejected(number(run), line: line)
        case let .replaced(run, stopping): .replaced(number(run), stopping: stopping.map(number))
        case let .cooled(run): .cooled(number(run))
        case let .slotRan(run): .slotRan(number(run))
        }
    }
}

extension KeySlot {
    func numbered(_ number: (Int64) -> Int64) -> Self {
        KeySlot(holder: holder.map(number), line: line.map(number), draining: Set(draining.map(number)))
    }
}

extension RunStop {
    /// The stop with its runs numbered. The end a queued run's stop decided is kept as it was
    /// decided (its phases, seq and time: not decided again); only what names a run is numbered,
    /// its run and its detail, which is the stop's own record (`RunMachine.Stop.detail`, as
    /// `StopDecision` records it: a replace names its replacing run), made again for the numbered
    /// stop.
    func numbered(_ number: (Int64) -> Int64) -> Self {
        var numberedStop = stop
        if case let .replaced(by) = stop { numberedStop = .replaced(by: number(by)) }
        var decision = decision
        if case var .ends(end) = decision {
            assert(end.detail == stop.detail, "a stop's end records the stop's own detail, numbered with it")
            end.runID = number(end.runID)
            end.detail = numberedStop.detail
            decision = .ends(end)
        }
        return RunStop(run: number(run), stop: numberedStop, decision: decision)
    }
}

extension BatonError {
    /// The refusals a batch answers that name a run (a delivery's, a definition's), numbered.
    func numbered(_ number: (Int64) -> Int64) -> Self {
        switch self {
        case let .delivered(run, hook, delivery): .delivered(run: number(run), hook: hook, delivery: delivery)
        case let .definitionMismatch(run, action, host): .definitionMismatch(run: number(run), action: action, host: host)
        default: self
        }
    }
}
