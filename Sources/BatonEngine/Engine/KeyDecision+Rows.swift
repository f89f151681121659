/// Which run a debounced trigger of a key shares (whether a queued run may start:
/// `KeyDecision+Start`): the rule `KeyDecision.view` applies to a key's facts (`KeyFacts`),
/// whether a host's flights or a fleet's rows gave them.
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
