/// `rateLimit: { runs: 10, per: "1h", scope: "key", over: "reject" }`: at most `runs` runs of the
/// action start in any window of `per`, counted per key or for the whole action. A trigger that
/// would make a run over it is refused `rate_limited` (`over: reject`), or its run waits queued
/// until a start fits again (`over: delay`). Counted from run starts (`RateBook`).
public struct RateLimit: Sendable, Equatable {
    /// What the starts are counted for.
    public enum Scope: String, Sendable, CaseIterable {
        case key, action
    }

    /// What a trigger over the limit does.
    public enum Over: String, Sendable, CaseIterable {
        case reject, delay
    }

    public var runs: Int
    public var per: Duration
    public var scope: Scope
    public var over: Over

    public init(runs: Int, per: Duration, scope: Scope = .key, over: Over = .reject) {
        self.runs = runs
        self.per = per
        self.scope = scope
        self.over = over
    }

    /// "10 runs per 1h per key".
    public var text: String {
        "\(runs) run\(runs == 1 ? "" : "s") per \(DurationText.format(per)) per \(scope.rawValue)"
    }
}

/// The starts a run counts against: its limit and the bucket (its key, or its action) they are counted in.
public struct RateClaim: Sendable, Equatable {
    public var bucket: String
    public var limit: RateLimit

    public init(bucket: String, limit: RateLimit) {
        self.bucket = bucket
        self.limit = limit
    }
}

extension Action {
    /// What a run of key `key` counts against; nil when the action has no rate limit.
    public func rateClaim(key: String) -> RateClaim? {
        rateLimit.map { RateClaim(bucket: $0.scope == .action ? "action \(name)" : "key \(key)", limit: $0) }
    }
}
