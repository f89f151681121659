/// The engine's answers to what a store that keeps its keys in rows (the fleet) asks of a key
/// between triggers: which run a debounced trigger shares (whether a queued run may start:
/// `KeyDecision+Start`).
/// The store reads the facts (a slot, the runs' windows and phases, whether a window passed by
/// its clock) and writes the answer back; the rule is here, as one machine's (`KeySlot`).
extension KeyDecision {
    /// The run a debounced trigger of the key shares, with its window: the holder, else the
    /// follow-up, the first not being replaced that has a window and has not started
    /// (`KeySlot.pendingRun`). `started` says whether a run has left `queued` (nil: unknown, taken as not).
    public static func pending(in slot: KeySlot, windows: [Int64: DebounceWindow],
                               started: (Int64) -> Bool = { _ in false }) -> Pending? {
        guard let run = slot.pendingRun(where: { windows[$0] != nil && !started($0) }), let window = windows[run] else { return nil }
        return Pending(run: run, window: window)
    }
}
