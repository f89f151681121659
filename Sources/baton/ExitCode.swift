import BatonClient
import BatonCore

/// baton's exit codes, as documented in `baton --help` and the README.
enum ExitCode {
    static let success: Int32 = 0
    /// The run ended in failure (timeout included).
    static let failure: Int32 = 1
    /// Bad usage, a bad request, an unknown action or run.
    static let usage: Int32 = 2
    /// The run was cancelled.
    static let cancelled: Int32 = 3
    /// batond cannot be reached (EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// An internal error in batond (EX_SOFTWARE).
    static let software: Int32 = 70
    /// Try again later (EX_TEMPFAIL, as run-one): busy because a run is in flight, batond shutting
    /// down, or its history cannot be written (a full disk).
    static let busy: Int32 = 75
    /// Forbidden (EX_NOPERM).
    static let forbidden: Int32 = 77

    static func of(_ phase: Phase) -> Int32 {
        switch phase {
        case .success: success
        case .failure: failure
        case .cancelled: cancelled
        case .queued, .loading, .retrying: success
        }
    }

    /// The exit code of a `BatonClient` error: batond's refusals by their wire code, a run's end by its phase.
    static func of(_ error: BatonClientError) -> Int32 {
        switch error {
        case .busy, .paused, .rateLimited, .shuttingDown, .storeUnavailable: busy
        case .forbidden: forbidden
        case .internal: software
        case .badRequest, .badParam, .unknownAction, .unknownRun, .notWaiting: usage
        case .cancelled: cancelled
        case .failed: failure
        case .unavailable, .restarting: unavailable
        }
    }
}
