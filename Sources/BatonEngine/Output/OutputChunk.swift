import FoundationEssentials

/// Which pipe of a run's processes a chunk of output came from.
public enum StandardStream: String, Sendable, Codable, CaseIterable {
    case stdout, stderr

    /// The number the history stores (1 and 2, as the file descriptors).
    public var code: Int64 { self == .stdout ? 1 : 2 }

    /// The stream of a stored number, or nil.
    public init?(code: Int64) {
        switch code {
        case 1: self = .stdout
        case 2: self = .stderr
        default: return nil
        }
    }
}

/// Bytes one stream of a run wrote, in a row: where they are in the run's whole output, from
/// which stream, and when the first of them arrived.
public struct OutputChunk: Sendable, Equatable, Codable {
    /// The position of the first byte in everything the run wrote (dropped bytes count too).
    public var start: Int64
    public var stream: StandardStream
    public var at: Timestamp
    public var bytes: [UInt8]

    public init(start: Int64, stream: StandardStream, at: Timestamp, bytes: [UInt8]) {
        self.start = start
        self.stream = stream
        self.at = at
        self.bytes = bytes
    }

    /// The position just past the last byte.
    public var end: Int64 { start + Int64(bytes.count) }

    /// On the wire the bytes are `data`, in base64, so that any bytes go through JSON exactly.
    enum CodingKeys: String, CodingKey { case start, stream, at, data }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        start = try container.decode(Int64.self, forKey: .start)
        stream = try container.decode(StandardStream.self, forKey: .stream)
        at = try container.decode(Timestamp.self, forKey: .at)
        bytes = Array(try container.decode(Data.self, forKey: .data))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(start, forKey: .start)
        try container.encode(stream, forKey: .stream)
        try container.encode(at, forKey: .at)
        try container.encode(Data(bytes), forKey: .data)
    }
}

/// One write of a run's output to the history: new chunks, the kept chunks past the head that
/// fell out of the tail (removed), and the totals so far.
public struct OutputWrite: Sendable, Equatable {
    public var runID: Int64
    public var chunks: [OutputChunk]
    /// Stored chunks that start at `head` or later and end at or before this are removed; nil: none.
    public var removeBefore: Int64?
    /// Where the head ends: chunks before it are never removed.
    public var head: Int64
    /// Every byte the run wrote so far.
    public var total: Int64
    /// How many of them are not kept (between the head and the tail).
    public var dropped: Int64

    public init(runID: Int64, chunks: [OutputChunk], removeBefore: Int64?, head: Int64, total: Int64, dropped: Int64) {
        self.runID = runID
        self.chunks = chunks
        self.removeBefore = removeBefore
        self.head = head
        self.total = total
        self.dropped = dropped
    }
}

/// Part of a run's kept output, from an offset, with the run's totals as last written.
public struct OutputPage: Sendable, Equatable {
    /// Chunks in order, the first cut to start at the offset asked for (or later, where bytes were dropped).
    public var chunks: [OutputChunk]
    /// Every byte the run wrote, as of the last write.
    public var total: Int64
    /// How many of them are not kept.
    public var dropped: Int64
    /// Where the head ends: a gap after it is where bytes were dropped.
    public var head: Int64

    public init(chunks: [OutputChunk], total: Int64, dropped: Int64, head: Int64) {
        self.chunks = chunks
        self.total = total
        self.dropped = dropped
        self.head = head
    }

    /// The position just past this page: where the next read starts.
    public var end: Int64? { chunks.last?.end }
}
