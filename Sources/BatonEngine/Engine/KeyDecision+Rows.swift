/// The engine's answers to what a store that keeps its keys in rows (the fleet) asks of a key
/// between triggers: which run a debounced trigger shares, and whether a queued run may start.
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

    /// Whether queued run `run` may start now: it holds its key, nothing of the key is still
    /// stopping (`KeySlot.startable`), its debounce window, if it has one, has passed, and its
    /// action is not `paused` (a pause that holds now: `ActionPause.holds(at:)`), and it does not
    /// wait for an approver's yes (`approving`: its approval row undecided, as one machine's
    /// `FlightTable.isApproving`; a denied or timed-out run has ended).
    public static func mayStart(_ run: Int64, phase: Phase, slot: KeySlot, windowPassed: Bool, paused: Bool, approving: Bool) -> Bool {
        phase == .queued && slot.startable == run && windowPassed && !paused && !approving
    }

    /// Whether a new run of `action` starts in the transaction that makes it when its key is
    /// free: not one that waits for an approver first (`approve`), as one machine's
    /// `awaitApproval` holds it back, nor one that needs other runs first (`needs`: asked, then met),
    /// nor one whose action a held pause holds (`pause --hold`: it waits for the resume).
    public static func startsAtCreation(_ action: Action, held: Bool) -> Bool {
        !held && action.approve == nil && action.needs.isEmpty
    }
}
