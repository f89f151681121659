import BatonCore

/// Where a follower of a run's output is, as a value: chunks read from the fleet's database are
/// handed on from `next` only, so that a chunk read twice (two reads overlapping, a read tried
/// again) is told once, and one that starts before the offset is cut to it.
struct OutputCursor: Sendable, Equatable {
    let run: Int64
    /// Where the next chunk told starts (or later, where bytes were dropped).
    private(set) var next: Int64

    init(run: Int64, from offset: Int64) {
        self.run = run
        next = max(offset, 0)
    }

    /// The part of `chunks` (in order) past `next`, which moves to the end of the last.
    mutating func take(_ chunks: [OutputChunk]) -> [OutputChunk] {
        var out: [OutputChunk] = []
        for var chunk in chunks where chunk.end > next {
            if chunk.start < next {
                chunk.bytes.removeFirst(Int(next - chunk.start))
                chunk.start = next
            }
            next = chunk.end
            out.append(chunk)
        }
        return out
    }
}
