/// Replaces every occurrence of a run's secret values in one stream of its output by `***`,
/// before the output is kept, streamed or journaled. A value may arrive split across chunks:
/// bytes at a chunk's end that could begin a value are held back (fewer than the longest
/// value's length) until the next chunk tells, and given back by `finish` at the stream's end.
/// Occurrences that overlap (of one value or of two) are masked as one: no piece of any shows.
/// A pure value: one per stream.
public struct SecretRedactor: Sendable, Equatable {
    /// What a value is replaced by.
    public static let mask: [UInt8] = Array(Action.maskedValue.utf8)

    /// The values, longest first, each non-empty and once.
    private let values: [[UInt8]]
    /// Whether a byte starts some value: most bytes are copied after one look-up.
    private let starts: [Bool]
    /// Bytes from the end of the last chunk that may begin a value.
    public private(set) var held: [UInt8] = []
    /// How many of `held`'s first bytes the last `***` given out already covers (a value that
    /// overlaps the one masked may still end past them).
    private var covered = 0

    /// A redactor of `values`; nil when none is non-empty (nothing to redact).
    public init?(values: some Sequence<String>) {
        let unique = Set(values.map { Array($0.utf8) }.filter { !$0.isEmpty })
        guard !unique.isEmpty else { return nil }
        self.values = unique.sorted { $0.count != $1.count ? $0.count > $1.count : $0.lexicographicallyPrecedes($1) }
        var starts = [Bool](repeating: false, count: 256)
        for value in unique { starts[Int(value[0])] = true }
        self.starts = starts
    }

    /// The chunk with every value in it replaced, less the bytes held back for the next one
    /// (with the bytes held from the last one in front).
    public mutating func redact(_ chunk: [UInt8]) -> [UInt8] {
        let buffer = held.isEmpty ? chunk : held + chunk
        let scanned = scan(buffer, final: false, covered: covered)
        held = Array(buffer[scanned.rest...])
        covered = scanned.covered
        return scanned.out
    }

    /// The bytes still held back, at the stream's end (they are no whole value).
    public mutating func finish() -> [UInt8] {
        defer { (held, covered) = ([], 0) }
        return held.isEmpty ? [] : scan(held, final: true, covered: covered).out
    }

    /// A whole text's bytes with every value replaced (nothing held back): an error message,
    /// an attempt's kept tail. When `cutFront`, the text is the end of something longer, and
    /// its first bytes, where they end some value, are masked too (the value's start was cut
    /// off); when `cutBack`, it is the start of something longer, and its last bytes, where they
    /// begin some value, are masked.
    public func redactAll(_ bytes: [UInt8], cutFront: Bool = false, cutBack: Bool = false) -> [UInt8] {
        var bytes = bytes
        if cutFront, let cut = longestValueEnd(at: bytes) { bytes.replaceSubrange(0..<cut, with: Self.mask) }
        var (out, rest, covered) = scan(bytes, final: !cutBack, covered: 0)
        if rest + covered < bytes.count { out += Self.mask }
        return out
    }

    /// A text with every value replaced (`cutBack`: as above).
    public func redactAll(_ text: String, cutBack: Bool = false) -> String {
        let bytes = Array(text.utf8)
        let out = redactAll(bytes, cutBack: cutBack)
        return out == bytes ? text : String(decoding: out, as: UTF8.self)
    }

    /// Copies `buffer`, masking the union of all the values' occurrences (one `***` for each run
    /// of overlapping ones: none leaves a piece of another visible); its first `covered` bytes
    /// are under a `***` already given. Unless `final`, stops where what is left may begin a
    /// value, and returns where that is and how many bytes from there the last `***` covers.
    private func scan(_ buffer: [UInt8], final: Bool, covered: Int) -> (out: [UInt8], rest: Int, covered: Int) {
        var out: [UInt8] = []
        out.reserveCapacity(buffer.count)
        var index = 0
        var maskedEnd = covered
        while index < buffer.count {
            let byte = buffer[index]
            let inside = index < maskedEnd
            guard starts[Int(byte)] else {
                if !inside { out.append(byte) }
                index += 1
                continue
            }
            switch match(buffer, at: index, final: final) {
            case let .whole(length):
                if !inside { out += Self.mask }
                maskedEnd = max(maskedEnd, index + length)
            case .undecided:
                return (out, index, max(maskedEnd - index, 0))
            case .none:
                if !inside { out.append(byte) }
            }
            index += 1
        }
        return (out, buffer.count, 0)
    }

    private enum Match { case whole(Int), undecided, none }

    /// The longest value at `index`; undecided where the buffer ends inside a longer value than
    /// any that matched whole (more bytes may make it whole).
    private func match(_ buffer: [UInt8], at index: Int, final: Bool) -> Match {
        let left = buffer.count - index
        for value in values {
            if value.count <= left {
                if buffer[index..<index + value.count].elementsEqual(value) { return .whole(value.count) }
            } else if !final, buffer[index...].elementsEqual(value.prefix(left)) {
                return .undecided
            }
        }
        return .none
    }

    /// The most bytes at the start of `bytes` that are the end of some value (shorter than it).
    private func longestValueEnd(at bytes: [UInt8]) -> Int? {
        var best: Int?
        for value in values {
            for length in stride(from: min(value.count - 1, bytes.count), to: 0, by: -1) where length > (best ?? 0) {
                if bytes.prefix(length).elementsEqual(value.suffix(length)) {
                    best = length
                    break
                }
            }
        }
        return best
    }
}
