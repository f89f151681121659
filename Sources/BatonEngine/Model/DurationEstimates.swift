/// How long an action usually takes: the median of its recent successful runs, learned from the
/// history, so that `baton run` can show an estimated progress when the action reports none
/// (ButtonKit's `.estimated` progress, with the estimate measured instead of guessed).
public struct DurationEstimates: Sendable, Equatable {
    /// How many recent successful runs of each action count.
    public static let window = 20

    /// Recent successful durations per action, in microseconds.
    private var samples: [String: Samples] = [:]

    /// One action's recent durations, kept in arrival order and sorted: a new run's estimate (every
    /// trigger) reads the middle of the sorted ones, where it sorted a copy each time (issue 39).
    struct Samples: Sendable, Equatable {
        /// Oldest first.
        var recent: [Int64] = []
        /// The same, ascending.
        var sorted: [Int64] = []

        mutating func add(_ micros: Int64) {
            recent.append(micros)
            sorted.insert(micros, at: sorted.partitioningIndex { $0 >= micros })
            while recent.count > DurationEstimates.window {
                let oldest = recent.removeFirst()
                sorted.remove(at: sorted.partitioningIndex { $0 >= oldest })
            }
        }

        var median: Int64? {
            guard !sorted.isEmpty else { return nil }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
    }

    public init() {}

    /// Adds a successful run's duration.
    public mutating func record(_ action: String, micros: Int64) {
        guard micros >= 0 else { return }
        samples[action, default: Samples()].add(micros)
    }

    /// The median of the recent successful durations of `action`, in microseconds; nil before any.
    public func median(_ action: String) -> Int64? { samples[action]?.median }

    /// Forgets an action: a reload removed it or changed its command (`ConductorState.forget(actions:)`).
    public mutating func forget(_ action: String) { samples[action] = nil }
}

extension Array where Element == Int64 {
    /// The first index whose element satisfies `belongs` (false for a prefix, true after it).
    fileprivate func partitioningIndex(where belongs: (Int64) -> Bool) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
