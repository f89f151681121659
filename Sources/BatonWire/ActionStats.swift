import BatonEngine
/// How one action has been doing: outcomes, durations, and its latest runs.
public struct ActionStats: Codable, Sendable, Equatable {
    /// One recent ended run, for the sparkline.
    public struct Recent: Codable, Sendable, Equatable {
        public var id: Int64
        public var phase: Phase
        /// From first loading to the end, in microseconds; nil for a run cancelled while queued.
        public var duration: Int64?

        public init(id: Int64, phase: Phase, duration: Int64?) {
            self.id = id
            self.phase = phase
            self.duration = duration
        }
    }

    public var action: String
    public var success: Int
    public var failure: Int
    public var cancelled: Int
    /// success / (success + failure); nil before either.
    public var successRate: Double?
    /// Durations of successful runs, in microseconds.
    public var p50: Int64?
    public var p95: Int64?
    public var max: Int64?
    public var lastSuccess: Timestamp?
    public var lastFailure: Timestamp?
    /// Failures since the last success (cancelled runs neither count nor break it).
    public var failureStreak: Int
    /// The latest ended runs, oldest first (at most 20).
    public var recent: [Recent]
    /// CPU time (user and system) of ended runs where it was measured, in microseconds.
    public var cpuP50: Int64?
    public var cpuP95: Int64?
    /// Peak memory of ended runs where it was measured, in bytes.
    public var memoryP50: Int64?
    public var memoryP95: Int64?

    public var total: Int { success + failure + cancelled }

    public init(action: String, success: Int = 0, failure: Int = 0, cancelled: Int = 0, successRate: Double? = nil,
                p50: Int64? = nil, p95: Int64? = nil, max: Int64? = nil, lastSuccess: Timestamp? = nil,
                lastFailure: Timestamp? = nil, failureStreak: Int = 0, recent: [Recent] = []) {
        self.action = action
        self.success = success
        self.failure = failure
        self.cancelled = cancelled
        self.successRate = successRate
        self.p50 = p50
        self.p95 = p95
        self.max = max
        self.lastSuccess = lastSuccess
        self.lastFailure = lastFailure
        self.failureStreak = failureStreak
        self.recent = recent
    }
}

/// What a prune removed (or, dry, would remove): runs per action.
public struct PruneReport: Codable, Sendable, Equatable {
    public var removed: [String: Int]
    public var dryRun: Bool
    /// The bytes of output those runs keep (counted by a dry run; nil when not counted).
    public var outputBytes: Int64?
    /// The bytes of the artifacts those runs keep (counted by a dry run; nil when not counted).
    public var artifactBytes: Int64?

    public init(removed: [String: Int] = [:], dryRun: Bool, outputBytes: Int64? = nil, artifactBytes: Int64? = nil) {
        self.removed = removed
        self.dryRun = dryRun
        self.outputBytes = outputBytes
        self.artifactBytes = artifactBytes
    }

    public var total: Int { removed.values.reduce(0, +) }
}

extension ActionStats {
    /// The nearest-rank percentile of sorted values: the smallest value with at least p% at or below it.
    /// Sets the CPU and memory percentiles from each ended run's figures (any order).
    public mutating func setUsage(cpu: [Int64], memory: [Int64]) {
        let cpu = cpu.sorted(), memory = memory.sorted()
        cpuP50 = Self.nearestRank(cpu, 50)
        cpuP95 = Self.nearestRank(cpu, 95)
        memoryP50 = Self.nearestRank(memory, 50)
        memoryP95 = Self.nearestRank(memory, 95)
    }

    public static func nearestRank(_ sorted: [Int64], _ p: Double) -> Int64? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
}
