import BatonEngine
import BatonRuntime
/// A Prometheus histogram: how many observations fell at or under each upper bound, their sum
/// and their count. A value type; `Metrics` keeps them under its lock.
public struct Histogram: Sendable, Equatable {
    /// The upper bounds, ascending; `+Inf` is implied after the last.
    public let bounds: [Double]
    /// Observations per bucket, not cumulative; one more than `bounds` (the `+Inf` bucket).
    private(set) var buckets: [UInt64]
    public private(set) var sum: Double = 0
    public private(set) var count: UInt64 = 0

    public init(bounds: [Double]) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "histogram bounds must ascend")
        self.bounds = bounds
        buckets = Array(repeating: 0, count: bounds.count + 1)
    }

    public mutating func observe(_ value: Double) {
        var low = 0, high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if value <= bounds[middle] { high = middle } else { low = middle + 1 }
        }
        buckets[low] += 1
        sum += value
        count += 1
    }

    /// The count at or under each bound, then the total (`le="+Inf"`), as the format wants them.
    public var cumulative: [UInt64] {
        var total: UInt64 = 0
        return buckets.map { total += $0; return total }
    }

    /// Run durations: 5 ms to an hour.
    public static let durationBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600]
    /// Peak memory: 1 MiB to 16 GiB, by powers of four.
    public static let memoryBounds: [Double] = (0...7).map { Double(1 << (20 + 2 * $0)) }
    /// Store commits: 100 µs to 5 s.
    public static let commitBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]
    /// Items per commit: 1 to 2,000 (the largest batch).
    public static let groupBounds: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_024, 2_000]
}
