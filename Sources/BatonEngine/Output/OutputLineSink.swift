/// One line a run wrote, with what names it: for a log beside the history (the journal).
public struct OutputLine: Sendable, Equatable {
    public var runID: Int64
    public var action: String
    public var key: String
    public var stream: StandardStream
    /// The line's bytes, without its newline: any bytes, not always UTF-8.
    public var bytes: [UInt8]

    public init(runID: Int64, action: String, key: String, stream: StandardStream, bytes: [UInt8]) {
        self.runID = runID
        self.action = action
        self.key = key
        self.stream = stream
        self.bytes = bytes
    }
}

/// Where the conductor sends every line of every run's output besides the history. Called on
/// the event loop with no lock held: it must not block (a full log drops lines, it never slows a run).
public protocol OutputLineSink: Sendable {
    func write(_ line: OutputLine)
}
