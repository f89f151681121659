extension ConductorState {
    // MARK: Seeds from the history, at start

    /// Seeds the last outcomes and recent durations from the history (at start).
    public mutating func remember(lastEnded runs: [RunSnapshot], durations: [String: [Int64]]) {
        for run in runs where lastEnded[run.action].map({ $0.id < run.id }) ?? true { lastEnded[run.action] = run }
        for (action, list) in durations { for micros in list { estimates.record(action, micros: micros) } }
    }

    /// Seeds the last successes of keys with a cooldown from the history (at start); a later
    /// success of a key wins.
    public mutating func remember(successes runs: [RunSnapshot]) {
        for run in runs where run.phase == .success && (successes[run.key].map { $0.id < run.id } ?? true) {
            successes[run.key] = run
        }
    }

    /// Seeds the runs of scheduled slots from the history (at start), so that a restart does not
    /// run a slot again.
    public mutating func remember(slots runs: [RunSnapshot]) {
        for run in runs.sorted(by: { $0.id < $1.id }) { slots.record(run) }
    }

    /// Makes the next run id at least `id` (ids are never reused, even after a lost history).
    public mutating func reserveIDs(from id: Int64) { nextRunID = max(nextRunID, id) }

    // MARK: What a reload makes stale

    /// A reload removed these actions or changed what they run: what was measured of them (their
    /// recent durations) says nothing of a later action of the same name, and neither does a run
    /// of theirs in flight now (queued or running), which keeps the definition it was made with.
    public mutating func forget(actions names: [String]) {
        for name in names { estimates.forget(name) }
        let names = Set(names)
        let runs = flights.compactMap { names.contains($0.value.run.action) ? $0.key : nil }
        for id in runs { flights[id]?.measured = false }
    }
}
