/// A run's output on its way to the history, as a value: cut into chunks (one stream, at most
/// `chunkSize` bytes each), bounded by `keep` (the first half of it kept as the head, the last
/// half as the tail, what falls between dropped and counted), and handed out as writes, at most
/// one in flight: while the store has not committed the last, new bytes wait here, and the tail
/// of what waits is trimmed like the stored one, so memory stays within `keep` and a chunk.
public struct OutputLimiter: Sendable, Equatable {
    public let runID: Int64
    /// The most bytes kept of the run (a little more while a stored chunk straddles the tail's start).
    public let keep: Int64
    public let chunkSize: Int
    /// Bytes before this position are the head: kept, never removed.
    public var head: Int64 { keep - keep / 2 }
    /// Every byte the run wrote.
    public private(set) var total: Int64 = 0
    /// Chunks not yet handed to the store, in order.
    public private(set) var pending: [OutputChunk] = []
    /// When the oldest pending byte arrived.
    public private(set) var pendingSince: Timestamp?
    /// Whether a write is handed out and not yet committed.
    public private(set) var inFlight = false
    /// The stored chunks past the head, as ranges, in order; and the stored head's size.
    private var storedTail: [Range<Int64>] = []
    private var storedHead: Int64 = 0
    /// `total` as of the last write, so that a write with nothing new is not made.
    private var writtenTotal: Int64 = 0

    public init(runID: Int64, keep: Int64, chunkSize: Int = 64 * 1_024) {
        self.runID = runID
        self.keep = max(keep, 0)
        self.chunkSize = max(chunkSize, 1)
    }

    /// A limiter for a run whose first `total` bytes the history holds already (a run adopted
    /// after batond restarted): its output continues from there.
    public init(runID: Int64, keep: Int64, resumingAt total: Int64) {
        self.init(runID: runID, keep: keep)
        self.total = max(total, 0)
        writtenTotal = self.total
        storedHead = min(self.total, head)
    }

    /// Where the tail starts now: the head's end, or `keep / 2` bytes before the end.
    public var tailStart: Int64 { max(head, total - keep / 2) }

    /// The bytes of pending chunks.
    public var pendingBytes: Int { pending.reduce(0) { $0 + $1.bytes.count } }

    /// Takes bytes one stream wrote at `at`; returns whether a write is due now (a chunk's worth
    /// waits, and the run has not passed keep).
    public mutating func append(_ bytes: some Collection<UInt8>, from stream: StandardStream, at: Timestamp) -> Bool {
        guard !bytes.isEmpty else { return false }
        let start = total
        total += Int64(bytes.count)
        let inHead = Int(max(0, min(Int64(bytes.count), head - start)))
        if inHead > 0 { add(bytes.prefix(inHead), start, stream, at) }
        if inHead < bytes.count {
            let rest = bytes.dropFirst(inHead)
            // Only what can still be in the tail is copied.
            let wanted = Int(min(Int64(rest.count), total - tailStart))
            if wanted > 0 { add(rest.suffix(wanted), total - Int64(wanted), stream, at) }
        }
        trimPending()
        if pendingSince == nil, !pending.isEmpty { pendingSince = at }
        // Past keep, writes go by the delay only (see `Conductor.outputCommitted`).
        return !inFlight && pendingBytes >= chunkSize && !isPastKeep
    }

    /// The next write: what waits, the stored tail chunks now out of the window, the totals. Nil
    /// when a write is in flight (unless `final`: the attempt ended, and its last bytes go
    /// before its end) or nothing changed.
    public mutating func write(final: Bool = false) -> OutputWrite? {
        guard final || !inFlight, total != writtenTotal || !pending.isEmpty else { return nil }
        let window = tailStart
        let outside = storedTail.prefix { $0.upperBound <= window }.count
        storedTail.removeFirst(outside)
        // At most `maxWriteBytes` (all at the end): a flood's writes stay small transactions, so
        // that other runs' writes (a trigger's creation) never wait behind megabytes of output.
        var taken = 0, bytes = 0
        while taken < pending.count, final || taken == 0 || bytes + pending[taken].bytes.count <= maxWriteBytes {
            bytes += pending[taken].bytes.count
            taken += 1
        }
        let chunks = Array(pending.prefix(taken))
        pending.removeFirst(chunks.count)
        for chunk in chunks {
            if chunk.start < head { storedHead += Int64(chunk.bytes.count) } else { storedTail.append(chunk.start..<chunk.end) }
        }
        // What still waits is not dropped: it is written next.
        let kept = storedHead + storedTail.reduce(0) { $0 + $1.upperBound - $1.lowerBound } + Int64(pendingBytes)
        let write = OutputWrite(runID: runID, chunks: chunks, removeBefore: outside > 0 ? window : nil, head: head,
                                total: total, dropped: total - kept)
        pendingSince = pending.isEmpty ? nil : pending[0].at
        writtenTotal = total
        inFlight = true
        return write
    }

    /// Whether the run wrote more than `keep`: from now on bytes fall out of the tail.
    public var isPastKeep: Bool { total > keep }

    /// The most bytes of chunks one write (but the last) carries: four chunks.
    public var maxWriteBytes: Int { 4 * chunkSize }

    /// The last write was committed (or failed); returns whether another is due.
    public mutating func committed() -> Bool {
        inFlight = false
        return !pending.isEmpty
    }

    /// Appends to the last pending chunk where it is the same stream, contiguous, on the same
    /// side of the head's end and not full; else starts new chunks of at most `chunkSize`.
    private mutating func add(_ bytes: some Collection<UInt8>, _ start: Int64, _ stream: StandardStream, _ at: Timestamp) {
        var rest = bytes[...]
        var position = start
        if var last = pending.last, last.stream == stream, last.end == start, (last.start < head) == (start < head),
           last.bytes.count < chunkSize {
            let room = chunkSize - last.bytes.count
            last.bytes.append(contentsOf: rest.prefix(room))
            position += Int64(min(room, rest.count))
            rest = rest.dropFirst(room)
            pending[pending.count - 1] = last
        }
        while !rest.isEmpty {
            let piece = Array(rest.prefix(chunkSize))
            pending.append(OutputChunk(start: position, stream: stream, at: at, bytes: piece))
            position += Int64(piece.count)
            rest = rest.dropFirst(chunkSize)
        }
    }

    /// Drops the pending bytes past the head that are no longer in the tail (pending head
    /// chunks come first, tail chunks after them).
    private mutating func trimPending() {
        let window = tailStart
        let firstTail = pending.firstIndex { $0.start >= head } ?? pending.count
        let outside = pending[firstTail...].prefix { $0.end <= window }.count
        pending.removeSubrange(firstTail..<(firstTail + outside))
        trimFront(of: firstTail, to: window)
    }

    private mutating func trimFront(of index: Int, to window: Int64) {
        guard index < pending.count, pending[index].start < window else { return }
        let cut = Int(window - pending[index].start)
        pending[index].bytes.removeFirst(cut)
        pending[index].start = window
    }
}
