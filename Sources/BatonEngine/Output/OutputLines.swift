/// A run's output cut into lines for a log that keeps lines (the journal): bytes in, whole lines
/// out, each stream on its own (a line of stdout is never glued to one of stderr). A line longer
/// than `maxLine` is cut there, as journald's `LineMax` cuts its own streams; what is left
/// without a newline at the end comes out by `finish`.
public struct OutputLines: Sendable, Equatable {
    /// 48 KiB: journald's default `LineMax`.
    public static let defaultMaxLine = 48 * 1_024

    public let maxLine: Int
    /// The bytes of each stream since its last newline (never more than `maxLine`).
    private var partial: [StandardStream: [UInt8]] = [:]

    public init(maxLine: Int = Self.defaultMaxLine) {
        precondition(maxLine > 0, "a line holds at least one byte")
        self.maxLine = maxLine
    }

    /// The lines `bytes` completes, without their newline, in order.
    public mutating func append(_ bytes: [UInt8], from stream: StandardStream) -> [[UInt8]] {
        var line = partial.removeValue(forKey: stream) ?? []
        var lines: [[UInt8]] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                lines.append(line)
                line = []
                continue
            }
            line.append(byte)
            if line.count == maxLine {
                lines.append(line)
                line = []
            }
        }
        if !line.isEmpty { partial[stream] = line }
        return lines
    }

    /// What is left of each stream without a newline (stdout first), and nothing after.
    public mutating func finish() -> [(stream: StandardStream, line: [UInt8])] {
        defer { partial = [:] }
        return StandardStream.allCases.compactMap { stream in partial[stream].map { (stream, $0) } }
    }

    /// How many bytes wait for their newline.
    public var waiting: Int { partial.values.reduce(0) { $0 + $1.count } }
}
