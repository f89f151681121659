/// A stop asked of a run whose attempt runs (loading) is written down before its end is, where a
/// batond started after a crash must still know it: a cancel and a replace, which someone asked
/// for. A restart then ends the run as the stop says (`RecoveryDecision.endStopped`) instead of
/// starting it again where its action says `onInterrupt: "restart"` (review-fleetrecovery12 H1).
/// One machine writes it as `JournalEntry.stopAsked` (the run's row's `stop`); a fleet marks the
/// row in the transaction that decides the stop (`RunStop`), before the run's owner hears of it.
/// A timeout, a shutdown, a need or an approval's end is decided again by whoever recovers the run.
extension RunMachine.Stop {
    /// Whether the stop is written down when asked of a run with an attempt.
    public var outlivesBatond: Bool {
        switch self {
        case .cancelled, .replaced: true
        case .timeout, .shutdown, .needs, .denied, .approvalTimedOut: false
        }
    }

    /// How the stop is stored in a run's row: `cancelled 1000`, `cancelled -`, `replaced 42`; a
    /// group principal's cancel `cancelled 4294967294 carol@example.org via group:ops`. A stop
    /// that is not written down (`outlivesBatond`) reads back as an unknown asker's cancel.
    public var recordText: String {
        switch self {
        case let .cancelled(by, principal): "cancelled \(by.map(String.init) ?? "-")" + (principal.map { " " + $0 } ?? "")
        case let .replaced(by): "replaced \(by)"
        case .timeout, .shutdown, .needs, .denied, .approvalTimedOut: "cancelled -"
        }
    }

    /// The stop a row's `recordText` names; any other text is an unknown asker's cancel (a run
    /// marked to stop is stopped, whatever else its mark says).
    public init(recordText text: String) {
        let parts = text.split(separator: " ", maxSplits: 2)
        if parts.first == "replaced", parts.count == 2, let id = Int64(parts[1]) {
            self = .replaced(by: id)
        } else {
            self = .cancelled(by: parts.count >= 2 ? UInt32(parts[1]) : nil, principal: parts.count == 3 ? String(parts[2]) : nil)
        }
    }
}
