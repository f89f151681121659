import BatonCore

/// Why a `BatonClient` call did not give what was asked: batond's refusal (one case per wire
/// code, with its message), a run that ended cancelled or failed, or no batond to ask.
public enum BatonClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `busy`: the key has run `run` in flight (in its phase since `since`, when batond says) and the policy is `reject`.
    case busy(run: Int64, since: Timestamp?, message: String)
    /// `paused`: the action is paused; the message says by whom, why and until when.
    case paused(String)
    /// `rate_limited`: a new run would start over the action's rate limit; `next`: when one may.
    case rateLimited(next: Timestamp?, message: String)
    /// `forbidden`: the peer may not do this; the message names the permission.
    case forbidden(String)
    /// `unknown_action`: no action has that name.
    case unknownAction(String)
    /// `unknown_run`: no run has that id.
    case unknownRun(String)
    /// `not_waiting`: an approve or deny of a run that does not wait for approval (decided already, started or ended).
    case notWaiting(String)
    /// `bad_request` about one param (`error.param`): undeclared, missing or not matching its pattern.
    case badParam(name: String, reason: String)
    /// `bad_request` about anything else (a policy the action does not allow, a cap passed).
    case badRequest(String)
    /// `shutting_down`: batond is stopping and takes no new triggers.
    case shuttingDown(String)
    /// `store_unavailable`: the history cannot be written or read.
    case storeUnavailable(String)
    /// `internal`: a bug in batond; the message says what.
    case `internal`(String)
    /// The run ended `cancelled`, by the uid `by` where a person cancelled it (nil: replaced, shutdown).
    case cancelled(by: UInt32?, run: RunSnapshot)
    /// The run ended in `failure`; thrown only where the caller asked (`throwingOnFailure`).
    case failed(RunOutcome)
    /// No answer: batond could not be reached, or the connection ended before the answer came.
    /// Every call waiting on that connection gets this; a new `BatonClient` connects again.
    case unavailable(String)
    /// batond restarted in place before it read the request (it said so, `restarting`): nothing
    /// was done, and the request may be sent again on a new `BatonClient`, which reaches the new
    /// batond (waiting in the socket's backlog while it starts), without running anything twice.
    case restarting(String)

    /// Whether this ends a request batond took because it restarts in place (its
    /// `{"restarting":true}` line): a follower goes on on a new client, which reaches the new batond.
    public var endedByRestart: Bool {
        if case let .unavailable(message) = self { return message == Multiplexer<Sink>.restartedReason }
        return false
    }

    /// What `.restarting` says.
    static let notTaken = "batond restarted or stopped before it took the request; nothing was done: send it again to the next batond"

    /// The error a failed final answer carries.
    public init(_ error: WireError) {
        switch error.code {
        case .busy: self = .busy(run: error.run ?? 0, since: error.since.map(Timestamp.init(rawValue:)), message: error.message)
        case .paused: self = .paused(error.message)
        case .rateLimited: self = .rateLimited(next: error.next.map(Timestamp.init(rawValue:)), message: error.message)
        case .forbidden: self = .forbidden(error.message)
        case .unknownAction: self = .unknownAction(error.message)
        case .unknownRun: self = .unknownRun(error.message)
        case .notWaiting: self = .notWaiting(error.message)
        case .badRequest: self = error.param.map { .badParam(name: $0, reason: error.message) } ?? .badRequest(error.message)
        case .shuttingDown: self = .shuttingDown(error.message)
        case .storeUnavailable: self = .storeUnavailable(error.message)
        case .internal: self = .internal(error.message)
        }
    }

    public var description: String {
        switch self {
        case let .busy(_, _, message), let .paused(message), let .rateLimited(_, message), let .forbidden(message), let .unknownAction(message), let .unknownRun(message), let .notWaiting(message),
             let .badParam(_, message), let .badRequest(message), let .shuttingDown(message), let .storeUnavailable(message),
             let .internal(message), let .unavailable(message), let .restarting(message):
            message
        case let .cancelled(by, run):
            "run \(run.id) of \(run.action) was cancelled" + (by.map { " by uid \($0)" } ?? run.reason.map { " (\($0))" } ?? "")
        case let .failed(outcome):
            "run \(outcome.run.id) of \(outcome.run.action) failed" + (outcome.run.error.map { ": \($0)" } ?? "")
        }
    }
}
