import BatonEngine
import FoundationEssentials

/// The whole story of one run.
public struct RunDetail: Codable, Sendable, Equatable {
    public var run: RunSnapshot
    public var transitions: [Transition]
    /// Triggers that joined, coalesced into or were rejected by this run.
    public var triggers: [TriggerRecord]
    /// The captured tail of stdout and stderr.
    public var output: Data?
    public var outputTruncated: Bool
    /// The runs this run's hooks made (`on:`), oldest first; nil where the history does not say.
    public var hookRuns: [RunSnapshot]?
    /// How much the run wrote and how much of it was dropped past `output.keep`; nil where the
    /// history kept no chunks of it (a run from before them, or none written).
    public var outputTotals: OutputTotals?

    public init(run: RunSnapshot, transitions: [Transition], triggers: [TriggerRecord], output: Data?, outputTruncated: Bool) {
        self.run = run
        self.transitions = transitions
        self.triggers = triggers
        self.output = output
        self.outputTruncated = outputTruncated
    }
}

/// A run's output in numbers: every byte it wrote, and those dropped between the head and the
/// tail the history keeps (`output.keep`).
public struct OutputTotals: Codable, Sendable, Equatable {
    public var written: Int64
    public var dropped: Int64

    public init(written: Int64, dropped: Int64) {
        self.written = written
        self.dropped = dropped
    }

    /// The bytes kept: what `baton logs` prints of both streams.
    public var kept: Int64 { written - dropped }
}
