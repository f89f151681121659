/// Why the conductor refused or could not serve a request. Each case maps to a stable wire code.
public enum BatonError: Error, Sendable, Equatable {
    /// The key has a run in flight and the policy is `reject`; or the policy is `queue` and the
    /// key's line of follow-ups is full: `line` runs wait in it.
    case busy(run: Int64, action: String, phase: Phase, since: Timestamp, line: Int? = nil)
    /// The action is paused: who paused it, why and until when.
    case paused(ActionPause)
    /// A new run of the action would start over its rate limit (`over: reject`); `next`: when one may.
    case rateLimited(action: String, limit: RateLimit, next: Timestamp)
    /// The key has a run in flight on another host of the fleet whose definition of the action
    /// (its fingerprint) differs from this host's: sharing it would hand the caller another command's outcome.
    case definitionMismatch(run: Int64, action: String, host: String)
    /// A webhook delivery seen before: the history (a fleet's, when another host took it first)
    /// records that it made or joined this run; nothing runs again.
    case delivered(run: Int64, hook: String, delivery: String)
    /// No action has that name.
    case unknownAction(String)
    /// No run has that id.
    case unknownRun(Int64)
    /// An approve or deny of a run that does not wait for approval: decided already (by whom), started, or ended.
    case notWaiting(run: Int64, String)
    /// The request is malformed or asks for something the action does not allow.
    case badRequest(String)
    /// A param of a trigger is undeclared, missing or does not match its pattern (a `bad_request`
    /// whose `error.param` names it).
    case badParam(name: String, message: String)
    /// The peer may not do this.
    case forbidden(String)
    /// The daemon is stopping and takes no new triggers.
    case shuttingDown
    /// The daemon stopped while the caller was following something: says what it was.
    case stopped(String)
    /// The history cannot be written (full disk, I/O error); nothing was started.
    case storeUnavailable(String)
    /// The history cannot be read (the database went away, a file cannot be opened).
    case historyUnreadable(String)
    /// A bug or an unexpected system failure.
    case internalError(String)

    /// The stable code on the wire.
    public var code: ErrorCode {
        switch self {
        case .busy, .definitionMismatch, .delivered: .busy
        case .paused: .paused
        case .rateLimited: .rateLimited
        case .unknownAction: .unknownAction
        case .unknownRun: .unknownRun
        case .notWaiting: .notWaiting
        case .badRequest, .badParam: .badRequest
        case .forbidden: .forbidden
        case .shuttingDown, .stopped: .shuttingDown
        case .storeUnavailable, .historyUnreadable: .storeUnavailable
        case .internalError: .internal
        }
    }

    /// A sentence for people, as of `now` (how long a busy key's run has been in its phase).
    public func message(at now: Timestamp) -> String {
        switch self {
        case let .busy(run, action, phase, since, line):
            "\(action) is busy: run \(run) has been \(phase.rawValue) for \(DurationText.format(now - since))"
                + (line.map { ", and its line is full: \($0) \($0 == 1 ? "run waits" : "runs wait")" } ?? "")
        case let .definitionMismatch(run, action, host):
            "\(action) is busy: run \(run) on host \(host) runs another definition of \(Action.quoted(action)) than this host's "
                + "(their configs differ), so it is not shared; make the hosts' definitions agree (batond --check-config names the ones that differ)"
        case let .paused(pause): pause.message(at: now)
        case let .rateLimited(action, limit, next):
            "\(action) is rate limited: at most \(limit.text); the next run may start in \(DurationText.format(max(next - now, .zero)))"
        case let .delivered(run, hook, delivery): "delivery \(delivery) of hook \(hook) was seen before: it made run \(run)"
        case let .unknownAction(name): "unknown action \(Action.quoted(name))"
        case let .unknownRun(id): "no run \(id)"
        case let .notWaiting(_, message): message
        case let .badRequest(message): message
        case let .badParam(_, message): message
        case let .forbidden(message): message
        case .shuttingDown: "batond is shutting down and takes no new triggers"
        case let .stopped(message): message
        case let .storeUnavailable(message): "the history cannot be written: \(message)"
        case let .historyUnreadable(message): "the history cannot be read: \(message)"
        case let .internalError(message): message
        }
    }
}
