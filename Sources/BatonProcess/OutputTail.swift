import BatonEngine
import BatonRuntime
/// The last `limit` bytes written to it, and whether anything before them was dropped.
public struct OutputTail: Sendable {
    public let limit: Int
    private var buffer: [UInt8] = []
    /// Set once bytes have been trimmed from the front.
    private var trimmed = false

    public init(limit: Int) {
        self.limit = max(limit, 0)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard limit > 0 else {
            trimmed = trimmed || !bytes.isEmpty
            return
        }
        buffer.append(contentsOf: bytes)
        // Trim only when twice the limit is reached, so appends stay amortised O(1).
        if buffer.count > 2 * limit {
            buffer.removeFirst(buffer.count - limit)
            trimmed = true
        }
    }

    /// The kept bytes, at most `limit`.
    public var bytes: [UInt8] {
        guard buffer.count > limit else { return buffer }
        return Array(buffer.suffix(limit))
    }

    /// Whether any bytes before the kept ones were dropped.
    public var isTruncated: Bool { trimmed || buffer.count > limit }
}

/// Keeps the last complete non-blank line of a stream, for error messages.
public struct LastLine: Sendable {
    private var current: [UInt8] = []
    private var last: [UInt8] = []
    /// The most bytes of a line kept: a longer one is cut there.
    public static let maxLength = 300

    public init() {}

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if current.contains(where: { $0 != 32 && $0 != 9 && $0 != 13 }) { last = current }
                current.removeAll(keepingCapacity: true)
            } else if current.count < Self.maxLength {
                current.append(byte)
            }
        }
    }

    /// The last non-blank line, including an unterminated one at the end.
    public var line: String? {
        let candidate = current.contains(where: { $0 != 32 && $0 != 9 && $0 != 13 }) ? current : last
        guard !candidate.isEmpty else { return nil }
        let whole = candidate.count >= Self.maxLength ? Self.wholeCharacters(candidate) : candidate[...]
        return String(decoding: whole, as: UTF8.self).trimmingWhitespace().description
    }

    /// A cut line less a character the cut split: its first bytes would decode as U+FFFD, which
    /// no mask of a secret value that goes on there would recognize as the value's start.
    static func wholeCharacters(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        guard let lead = bytes.lastIndex(where: { $0 & 0xC0 != 0x80 }), bytes.count - lead <= 4 else { return bytes[...] }
        let byte = bytes[lead]
        let needed = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
        return bytes.count - lead < needed ? bytes[..<lead] : bytes[...]
    }
}
