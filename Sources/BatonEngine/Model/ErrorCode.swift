/// The stable codes of errors on the wire (docs/protocol.md); clients branch on these, never on messages.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case busy
    /// The action is paused (`baton pause`): nothing runs until it is resumed or the pause ends.
    case paused
    /// A new run would start over the action's rate limit (`rateLimit`, `over: reject`).
    case rateLimited = "rate_limited"
    case unknownAction = "unknown_action"
    case unknownRun = "unknown_run"
    /// An approve or deny of a run that does not wait for approval (decided already, started or ended).
    case notWaiting = "not_waiting"
    case badRequest = "bad_request"
    case forbidden
    case shuttingDown = "shutting_down"
    case storeUnavailable = "store_unavailable"
    case `internal`
}
