import BatonCore

extension ConfigReader {
    /// The most runs a `rateLimit` may count (each start is remembered for its window).
    static let maxRateRuns = 100_000

    /// A rate limit counts starts the history keeps (a restart reads them back; a fleet counts
    /// its rows): an action whose retention would prune a start still inside its window, or keep
    /// fewer runs than it counts, is refused, naming both.
    mutating func rateLimitsKeptByRetention(_ config: Config) {
        for action in config.actions {
            guard let limit = action.rateLimit else { continue }
            let kept = config.retention.overridden(by: action.retention)
            let shortest = min(kept.maxAge, kept.keepFailures)
            if shortest < limit.per {
                fail("actions.\(action.name).rateLimit.per", "counts starts over \(DurationText.format(limit.per)), but retention removes ended runs "
                    + "after \(DurationText.format(shortest)): keep them at least as long (retention: { maxAge, keepFailures })")
            }
            if kept.maxRunsPerAction < limit.runs {
                fail("actions.\(action.name).rateLimit.runs", "counts \(limit.runs) starts, but retention keeps \(kept.maxRunsPerAction) runs of the action: "
                    + "keep at least as many (retention: { maxRunsPerAction })")
            }
        }
    }

    /// The longest `per`: a year and a day.
    static let longestRateWindow = Duration.seconds(366 * 86_400)

    /// `rateLimit: { runs: 10, per: "1h", scope: "key", over: "reject" }`: at most `runs` runs
    /// start in any window of `per` (1s to 366d), per key (the default) or for the whole action;
    /// a trigger over it is refused `rate_limited` (`over: "reject"`, the default) or its run waits
    /// queued until a start fits (`over: "delay"`).
    mutating func actionRateLimit(_ value: JSONValue, at: String) -> RateLimit? {
        guard let fields = object(value, at: at, allowed: ["runs", "per", "scope", "over"]) else { return nil }
        guard let runsValue = fields["runs"] else {
            fail("\(at).runs", "missing: how many runs may start per window, such as runs: 10")
            return nil
        }
        guard let perValue = fields["per"] else {
            fail("\(at).per", "missing: the window the runs are counted over, such as per: \"1h\"")
            return nil
        }
        let runs = integer(runsValue, at: "\(at).runs", min: 1, max: Self.maxRateRuns)
        var per = duration(perValue, at: "\(at).per")
        if let window = per, window < .seconds(1) || window > Self.longestRateWindow {
            fail("\(at).per", "must be from 1s to 366d, got \(DurationText.format(window))")
            per = nil
        }
        var limit = RateLimit(runs: runs ?? 1, per: per ?? .seconds(1))
        var ok = runs != nil && per != nil
        if let value = fields["scope"] {
            let scope = choice(value, at: "\(at).scope", RateLimit.Scope.allCases.map(\.rawValue)).flatMap(RateLimit.Scope.init(rawValue:))
            if let scope { limit.scope = scope } else { ok = false }
        }
        if let value = fields["over"] {
            let over = choice(value, at: "\(at).over", RateLimit.Over.allCases.map(\.rawValue)).flatMap(RateLimit.Over.init(rawValue:))
            if let over { limit.over = over } else { ok = false }
        }
        return ok ? limit : nil
    }
}
