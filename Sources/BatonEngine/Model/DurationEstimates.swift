/// How long an action usually takes: the median of its recent successful runs, learned from the
/// history, so that `baton run` can show an estimated progress when the action reports none
/// (ButtonKit's `.estimated` progress, with the estimate measured instead of guessed).
public struct DurationEstimates: Sendable, Equatable {
    /// How many recent successful runs of each action count.
    public static let window = 20

    /// Recent successful durations per action, oldest first, in microseconds.
    private var samples: [String: [Int64]] = [:]

    public init() {}

    /// Adds a successful run's duration.
    public mutating func record(_ action: String, micros: Int64) {
        guard micros >= 0 else { return }
        var list = samples[action, default: []]
        list.append(micros)
        if list.count > Self.window { list.removeFirst(list.count - Self.window) }
        samples[action] = list
    }

    /// The median of the recent successful durations of `action`, in microseconds; nil before any.
    public func median(_ action: String) -> Int64? {
        guard let list = samples[action], !list.isEmpty else { return nil }
        let sorted = list.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Forgets an action (it was removed from the config).
    public mutating func forget(_ action: String) { samples[action] = nil }
}
