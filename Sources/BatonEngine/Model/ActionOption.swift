/// One option of an in-process action, written as SwiftUI writes styles:
/// `conductor.run("refresh-cache", .join, .retry(attempts: 3), .timeout(.seconds(30))) { context in … }`.
public struct ActionOption: Sendable {
    /// Sets the option on an action.
    public let apply: @Sendable (inout Action) -> Void

    public init(_ apply: @escaping @Sendable (inout Action) -> Void) {
        self.apply = apply
    }

    /// A second trigger while a run is in flight fails with `busy` (the default).
    public static var reject: ActionOption { policy(.reject) }
    /// A second trigger shares the run in flight and its outcome.
    public static var join: ActionOption { policy(.join) }
    /// A second trigger gets one follow-up run that starts after the run in flight.
    public static var queue: ActionOption { policy(.queue) }
    /// A second trigger cancels the run in flight and starts a new one.
    public static var replace: ActionOption { policy(.replace) }

    /// What a second trigger does while a run is in flight.
    public static func policy(_ policy: Policy) -> ActionOption {
        ActionOption { $0.policy = policy }
    }

    /// Tries a failed run again up to `attempts` more times, waiting `backoff` (doubling up to `maxBackoff`).
    public static func retry(attempts: Int, backoff: Duration = .seconds(1), maxBackoff: Duration = .seconds(60)) -> ActionOption {
        ActionOption { $0.retry = RetryPolicy(attempts: max(attempts, 0), backoff: backoff, maxBackoff: maxBackoff) }
    }

    /// Ends a run that takes longer than `limit` (retries included) as a failure with reason `timeout`.
    public static func timeout(_ limit: Duration) -> ActionOption {
        ActionOption { $0.timeout = limit }
    }

    /// Makes the single-flight key the action plus these params' values.
    public static func key(_ params: String...) -> ActionOption {
        ActionOption { action in
            action.keyParams = params
            for name in params where action.params[name] == nil { action.params[name] = ParamSpec() }
        }
    }

    /// Says what the action does, for listings.
    public static func description(_ text: String) -> ActionOption {
        ActionOption { $0.description = text }
    }
}
