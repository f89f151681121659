/// Each hook's token bucket, as a value: a hook with `rateLimit` takes `requests` at once and one
/// more every `per / requests`; past that it answers 429. Time is given (`now`, from any fixed
/// origin), so the buckets are tested without a clock.
public struct RateLimiter: Sendable {
    /// Tokens left (in units of one request) and when they were counted, per hook.
    private var buckets: [String: (tokens: Double, at: Duration)] = [:]

    public init() {}

    /// Takes one request for `hook` at `now`: nil when it may go on, else the whole seconds until
    /// it could (for Retry-After).
    public mutating func admit(_ hook: String, _ limit: Hook.RateLimit?, now: Duration) -> Int? {
        guard let limit, limit.requests > 0, limit.per > .zero else { return nil }
        let capacity = Double(limit.requests)
        let perToken = Self.seconds(limit.per) / capacity
        var bucket = buckets[hook] ?? (capacity, now)
        bucket.tokens = min(capacity, bucket.tokens + max(0, Self.seconds(now - bucket.at)) / perToken)
        bucket.at = now
        defer { buckets[hook] = bucket }
        guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) * perToken).rounded(.up))) }
        bucket.tokens -= 1
        return nil
    }

    /// Forgets hooks no longer configured (after a reload).
    public mutating func keep(only hooks: Set<String>) {
        buckets = buckets.filter { hooks.contains($0.key) }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
