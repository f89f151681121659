/// What recovery does with a run's approval (a host's restart; a fleet's takeover of a gone
/// host's runs, or of its own previous start's): the one rule, for one machine and a fleet. A
/// reload does not review it: a run keeps the definition it was triggered with, `approve` included.
extension ApprovalState {
    /// The review's outcome.
    public enum Review: Sendable, Equatable {
        /// Nothing changes: it waits on, or was decided, or never waited and need not.
        case keep
        /// It waited, and its action (as loaded now) asks for no approval: it waits no more, written so.
        case waive(ApprovalState)
        /// It never waited nor started, and its action (as loaded now) asks for one: it waits from now.
        case arm
    }

    /// The review of `state` (nil: the run never waited) against the action's `approve` as
    /// loaded now, for a run that `started` before or not, at `now`.
    public static func review(_ state: ApprovalState?, approve: ApprovalRule?, started: Bool, at now: Timestamp) -> Review {
        guard let state else { return approve != nil && !started ? .arm : .keep }
        guard approve == nil, state.isWaiting else { return .keep }
        var waived = state
        waived.verdict = .waived
        waived.decidedAt = now
        waived.reason = waivedReason
        return .waive(waived)
    }

    /// Why a waived wait waits no more.
    public static let waivedReason = "the action's approve was removed from the config"
}
