import BatonCore
import Foundation

/// One line of the results: a figure, its baseline measured in the same run, and their ratio.
struct Figure: Codable {
    var name: String
    var value: Double
    var unit: String
    var baselineName: String?
    var baseline: Double?
    /// value / baseline, or baseline / value where lower is better; over 1 means Baton is ahead.
    var ratio: Double?
    var target: String?
    var note: String?

    init(_ name: String, _ value: Double, _ unit: String, baseline: (String, Double)? = nil, lowerIsBetter: Bool = false,
         target: String? = nil, note: String? = nil) {
        self.name = name
        self.value = value
        self.unit = unit
        self.baselineName = baseline?.0
        self.baseline = baseline?.1
        if let base = baseline?.1, base > 0, value > 0 { ratio = lowerIsBetter ? base / value : value / base }
        self.target = target
        self.note = note
    }
}

/// A monotonic stopwatch.
struct Stopwatch {
    private let start = ContinuousClock.now
    var seconds: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}

/// Percentiles of samples (nearest rank).
func percentile(_ samples: [Double], _ p: Double) -> Double {
    guard !samples.isEmpty else { return 0 }
    let sorted = samples.sorted()
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// Runs blocking work on its own thread, so that it never holds a thread of Swift's cooperative
/// pool (which the daemon under test needs; there are only as many as CPUs).
func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// Runs `body` on `threads` threads at once until `seconds` pass; returns operations per second.
/// `body` does one operation per call and returns false to stop its thread early.
func throughput(threads: Int, seconds: Double, _ body: @escaping @Sendable (Int) -> Bool) async -> Double {
    await blocking { throughputBlocking(threads: threads, seconds: seconds, { index in { body(index) } }) }
}

/// As above, each thread first making what it owns for the measurement (its connection) with
/// `open(index)`, then calling the operation `open` returned.
func throughput(threads: Int, seconds: Double, each open: @escaping @Sendable (Int) -> () -> Bool) async -> Double {
    await blocking { throughputBlocking(threads: threads, seconds: seconds, open) }
}

private func throughputBlocking(threads: Int, seconds: Double, _ open: @escaping @Sendable (Int) -> () -> Bool) -> Double {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let watch = Stopwatch()
    // Each thread counts its own operations and gives the count back as it ends.
    let counts = onThreads(threads) { index in
        let operation = open(index)
        var done = 0
        while ContinuousClock.now < deadline {
            guard operation() else { break }
            done += 1
        }
        return done
    }
    return Double(counts.reduce(0, +)) / watch.seconds
}

/// Runs `body(i)` for i in 0..<count, each on a thread of its own, and returns what each gave
/// back as it ended (its join, through a `OneShot`): a thread owns what it collects, and nothing
/// is shared while they run.
func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = (0..<count).map { _ in OneShot<T>() }
    for (index, result) in results.enumerated() {
        Thread.detachNewThread { result.set(body(index)) }
    }
    return results.map { $0.wait() }
}

/// A fresh directory for one benchmark, removed at exit.
func scratchDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "baton-bench-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Formats a number for the table: 12,345 or 1.23.
func show(_ value: Double) -> String {
    if value >= 100 {
        let digits = Array(String(Int(value.rounded())))
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return text
    }
    if value >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}

/// Prints a line at once, even when stdout is a pipe.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
