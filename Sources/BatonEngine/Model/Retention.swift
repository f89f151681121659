/// How long ended runs stay in the history. Runs in flight are never removed.
public struct Retention: Sendable, Equatable, Codable {
    /// Ended runs (success, cancelled) older than this are removed.
    public var maxAge: Duration
    /// Failed runs are kept this long instead: the history of what went wrong outlives the rest.
    public var keepFailures: Duration
    /// At most this many ended runs are kept per action, the newest, whatever their outcome.
    public var maxRunsPerAction: Int

    public init(maxAge: Duration = .seconds(90 * 86_400), keepFailures: Duration = .seconds(365 * 86_400),
                maxRunsPerAction: Int = 10_000) {
        self.maxAge = maxAge
        self.keepFailures = keepFailures
        self.maxRunsPerAction = maxRunsPerAction
    }

    /// 90 days, failures 365 days, 10,000 runs per action.
    public static let standard = Retention()

    /// How long a run a webhook delivery made is kept, whatever the limits say: a forge's
    /// redelivery within it gets that run, never a second one (issue 27 promises 24 hours).
    public static let deliveryKeep: Duration = .seconds(86_400)

    /// How long each action's successes are kept whatever the limits say: its `cooldown`. A
    /// trigger within it is `cooled` against the key's last success and names it (a host's
    /// `cooled` record refers to its row), so retention never takes a success a key still cools
    /// on: before, a host refused that trigger with a foreign-key error until it restarted, and
    /// the fleet, forgetting the success, ran it. A minute more than the cooldown: a trigger cooled
    /// at the window's end has its record written a commit later, and a prune between the two must
    /// not take the run it names.
    public static func cooling(_ actions: [Action]) -> [String: Duration] {
        Dictionary(actions.compactMap { action in action.cooldown.map { (action.name, $0 + .seconds(60)) } }, uniquingKeysWith: { max($0, $1) })
    }

    /// Per-action settings: each field set here replaces the global one.
    public struct Override: Sendable, Equatable {
        public var maxAge: Duration?
        public var keepFailures: Duration?
        public var maxRunsPerAction: Int?

        public init(maxAge: Duration? = nil, keepFailures: Duration? = nil, maxRunsPerAction: Int? = nil) {
            self.maxAge = maxAge
            self.keepFailures = keepFailures
            self.maxRunsPerAction = maxRunsPerAction
        }
    }

    /// This retention with an action's overrides applied.
    public func overridden(by override: Override?) -> Retention {
        guard let override else { return self }
        return Retention(maxAge: override.maxAge ?? maxAge, keepFailures: override.keepFailures ?? keepFailures,
                         maxRunsPerAction: override.maxRunsPerAction ?? maxRunsPerAction)
    }
}
