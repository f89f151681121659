/// One line a run wrote, with what names it: for a log beside the history (the journal).
public struct OutputLine: Sendable, Equatable {
    public var runID: Int64
    /// Which attempt of the run wrote it (1 for the first).
    public var attempt: Int
    /// The attempt's leader, whose pid is its process group's id (nil for a closure's attempt).
    public var pid: Int32?
    public var action: String
    public var key: String
    public var stream: StandardStream
    /// The line's bytes, without its newline: any bytes, not always UTF-8.
    public var bytes: [UInt8]

    public init(runID: Int64, attempt: Int = 1, pid: Int32? = nil, action: String, key: String, stream: StandardStream, bytes: [UInt8]) {
        self.runID = runID
        self.attempt = attempt
        self.pid = pid
        self.action = action
        self.key = key
        self.stream = stream
        self.bytes = bytes
    }
}

/// Where the conductor sends every line of every run's output besides the history. Called on
/// the event loop with no lock held: it must not block (a full log drops lines, it never slows a run).
public protocol OutputLineSink: Sendable {
    /// Takes one line of a run's output.
    func write(_ line: OutputLine)
    /// An attempt of the run is being started: its lines may come before its `loading`
    /// transition is committed (and logged). Called on the loop before the attempt's first line.
    func launched(run: Int64, attempt: Int)
}

extension OutputLineSink {
    /// A sink that does not order lines after transitions ignores launches.
    public func launched(run: Int64, attempt: Int) {}
}
