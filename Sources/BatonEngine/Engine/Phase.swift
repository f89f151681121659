/// Where a run is in its life: `queued` → `loading` → `success` / `failure` / `cancelled`,
/// with `retrying` between attempts.
public enum Phase: String, Codable, Sendable, CaseIterable {
    case queued
    case loading
    case retrying
    case success
    case failure
    case cancelled

    /// Whether the run is over: success, failure or cancelled.
    public var isTerminal: Bool {
        switch self {
        case .success, .failure, .cancelled: true
        case .queued, .loading, .retrying: false
        }
    }

    /// Whether a run may go from `from` (nil: the run does not exist yet) to `to`.
    ///
    /// This is the whole table of legal phase changes; the store refuses any other, and the
    /// crash test checks every recorded history against it.
    public static func allows(from: Phase?, to: Phase) -> Bool {
        switch (from, to) {
        case (nil, .queued): true
        case (.queued, .queued): true          // requeued after a restart of the daemon
        case (.queued, .loading): true
        case (.queued, .cancelled): true       // dropped, replaced or shut down before it started
        case (.queued, .failure): true         // cannot start after a restart: its secret params' values are gone
        case (.loading, .success), (.loading, .failure), (.loading, .cancelled): true
        case (.loading, .retrying): true
        case (.loading, .queued): true         // interrupted by a crash, restarted (onInterrupt: restart)
        case (.retrying, .loading): true
        case (.retrying, .failure), (.retrying, .cancelled): true
        case (.retrying, .queued): true        // interrupted during a backoff, restarted
        default: false
        }
    }
}
