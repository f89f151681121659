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

    public init(run: RunSnapshot, transitions: [Transition], triggers: [TriggerRecord], output: Data?, outputTruncated: Bool) {
        self.run = run
        self.transitions = transitions
        self.triggers = triggers
        self.output = output
        self.outputTruncated = outputTruncated
    }
}
