import BatonCore
import FoundationEssentials

/// A run's kept output, read back from its chunks.
extension History {
    /// The run's output from `offset`, up to about `maxBytes` (whole chunks, the first cut at the
    /// offset); nil when the run kept no chunks (an older run, or none yet).
    public func output(of run: Int64, from offset: Int64 = 0, maxBytes: Int = 1 << 20) throws -> OutputPage? {
        guard let totals = try totals(of: run) else { return nil }
        // The chunk that holds the offset starts at or before it; later ones after it.
        let first = try connection.withStatement("SELECT max(start) FROM output_chunks WHERE run_id = ? AND start <= ?") { s in
            try s.bind([.integer(run), .integer(max(offset, 0))])
            return try s.step() ? s.int64(0) ?? 0 : 0
        }
        var chunks: [OutputChunk] = []
        var bytes = 0
        try connection.withStatement("SELECT start, stream, at, bytes FROM output_chunks WHERE run_id = ? AND start >= ? ORDER BY start") { s in
            try s.bind([.integer(run), .integer(first)])
            while bytes < max(maxBytes, 1), try s.step() {
                var chunk = Self.decodeChunk(s)
                guard chunk.end > offset else { continue }
                if chunk.start < offset {
                    chunk.bytes.removeFirst(Int(offset - chunk.start))
                    chunk.start = offset
                }
                bytes += chunk.bytes.count
                chunks.append(chunk)
            }
        }
        return OutputPage(chunks: chunks, total: totals.total, dropped: totals.dropped, head: totals.head)
    }

    /// The last `limit` bytes the run kept, and whether any before them were not (the tail `show` prints).
    public func outputTail(of run: Int64, limit: Int = 64 * 1_024) throws -> (bytes: [UInt8], truncated: Bool)? {
        guard let totals = try totals(of: run) else { return nil }
        var chunks: [[UInt8]] = []
        var count = 0
        try connection.withStatement("SELECT start, stream, at, bytes FROM output_chunks WHERE run_id = ? ORDER BY start DESC") { s in
            try s.bind([.integer(run)])
            while count < limit, try s.step() {
                let chunk = Self.decodeChunk(s)
                count += chunk.bytes.count
                chunks.append(chunk.bytes)
            }
        }
        let tail = Array(chunks.reversed().joined().suffix(limit))
        return (tail, totals.total > Int64(tail.count))
    }

    /// What the run wrote and what was dropped of it; nil when it kept no chunks.
    public func outputTotals(of run: Int64) throws -> OutputTotals? {
        try totals(of: run).map { OutputTotals(written: $0.total, dropped: $0.dropped) }
    }

    private func totals(of run: Int64) throws -> (total: Int64, dropped: Int64, head: Int64)? {
        try connection.withStatement("SELECT total, dropped, head FROM output_totals WHERE run_id = ?") { s in
            try s.bind([.integer(run)])
            guard try s.step() else { return nil }
            return (s.int64(0) ?? 0, s.int64(1) ?? 0, s.int64(2) ?? 0)
        }
    }

    private static func decodeChunk(_ s: Statement) -> OutputChunk {
        let bytes: [UInt8] = if case let .blob(value) = s.value(3) { value } else { [] }
        return OutputChunk(start: s.int64(0) ?? 0, stream: StandardStream(code: s.int64(1) ?? 1) ?? .stdout,
                           at: Timestamp(rawValue: s.int64(2) ?? 0), bytes: bytes)
    }
}
