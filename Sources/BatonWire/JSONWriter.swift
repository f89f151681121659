import BatonEngine
import FoundationEssentials

/// Writes compact JSON by hand for the values on hot paths (every response line, every
/// transition's detail column), where Foundation's `JSONEncoder` cost more than the rest of the
/// work. The tests check its output decodes to what `JSONEncoder`'s does.
public struct JSONWriter {
    /// The bytes written are `buffer[..<length]`; past them, zeros to be written over: room made
    /// ahead, so that a write is a copy into the array's own memory, not an `append(contentsOf:)`
    /// (whose generic path cost about 72 instructions a call, 134 calls a run: issue 39).
    private var buffer: [UInt8]
    /// How many bytes of `buffer` are written.
    private var length = 0
    /// For each of the outermost 64 open objects and arrays (levels 1 to 64), a bit (the innermost
    /// of them is bit 0): whether its next member needs a comma before it; deeper levels' flags are
    /// in `deeper`. A bit each, not an array of flags: a
    /// member's start cost two uniqueness checks of that array (issue 39).
    private var commas: UInt64 = 0
    /// The objects and arrays open.
    private var depth = 0
    /// The flags of those opened past 64 levels, innermost last (the bits keep the outer 64).
    private var deeper: [Bool] = []
    /// A key was just written: the value that follows belongs to it.
    private var afterKey = false

    public init() { self.init(capacity: 256) }

    /// A writer with room for `capacity` bytes (a response line with a run takes about 500).
    public init(capacity: Int) { buffer = Array(repeating: 0, count: Swift.max(capacity, 16)) }

    /// The JSON so far, as UTF-8 (a copy: `take()` hands the bytes over without one).
    public var bytes: [UInt8] { Array(buffer[..<length]) }

    /// The JSON written, handed over: the writer is empty after it.
    public mutating func take() -> [UInt8] {
        buffer.removeSubrange(length...)
        let written = buffer
        (buffer, length, commas, depth, deeper, afterKey) = ([], 0, 0, 0, [], false)
        return written
    }

    /// The JSON so far, as text.
    public var text: String { String(decoding: buffer[..<length], as: UTF8.self) }

    public mutating func beginObject() { valueStart(); write(UInt8(ascii: "{")); open() }
    public mutating func endObject() { write(UInt8(ascii: "}")); close() }
    public mutating func beginArray() { valueStart(); write(UInt8(ascii: "[")); open() }
    public mutating func endArray() { write(UInt8(ascii: "]")); close() }

    private mutating func open() {
        if depth < 64 { commas <<= 1 } else { deeper.append(false) }
        depth += 1
    }

    private mutating func close() {
        precondition(depth > 0, "JSONWriter: an end without its begin")
        depth -= 1
        if depth < 64 { commas >>= 1 } else { deeper.removeLast() }
    }

    /// Starts a member of the current object (its name escaped as a string is); its value follows.
    @_disfavoredOverload
    public mutating func key(_ name: String) {
        memberStart()
        writeString(name)
        write(UInt8(ascii: ":"))
        afterKey = true
    }

    /// Starts a member named by a literal, copied as it is (a name in the code needs no escape):
    /// most of a response's keys. Its comma, quotes, name and colon are written in one go.
    public mutating func key(_ name: StaticString) {
        let comma = memberComma()
        name.withUTF8Buffer { units in
            assert(!units.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }, "a key that needs escaping")
            writing(atMost: units.count + 4) { out in
                var end = 0
                if comma { out[0] = UInt8(ascii: ","); end = 1 }
                out[end] = UInt8(ascii: "\"")
                end += 1
                if let base = units.baseAddress { (out + end).update(from: base, count: units.count) }
                end += units.count
                out[end] = UInt8(ascii: "\"")
                out[end + 1] = UInt8(ascii: ":")
                return end + 2
            }
        }
        afterKey = true
    }

    /// A comma unless this is the first member of the innermost object or array (none at the top).
    private mutating func memberStart() {
        if memberComma() { write(UInt8(ascii: ",")) }
    }

    /// Whether the next member needs a comma before it (the caller writes it); notes that the
    /// innermost object or array has a member now.
    private mutating func memberComma() -> Bool {
        if depth == 0 { return false }
        if depth <= 64 {
            if commas & 1 != 0 { return true }
            commas |= 1
            return false
        }
        if deeper[deeper.count - 1] { return true }
        deeper[deeper.count - 1] = true
        return false
    }

    private mutating func valueStart() {
        if afterKey { afterKey = false; return }
        memberStart()
    }

    public mutating func string(_ value: String) { valueStart(); writeString(value) }
    public mutating func int<I: BinaryInteger>(_ value: I) { valueStart(); writeInteger(value) }
    public mutating func bool(_ value: Bool) {
        valueStart()
        let text: StaticString = value ? "true" : "false"
        text.withUTF8Buffer { write(UnsafeRawBufferPointer($0)) }
    }
    public mutating func double(_ value: Double) { valueStart(); write(value.isFinite ? "\(value)" : "null") }
    /// Text that is already JSON.
    public mutating func raw(_ json: String) { valueStart(); write(json) }
    /// A value already written as JSON (a run's snapshot rendered once for several lines).
    public mutating func raw(_ json: [UInt8]) { valueStart(); json.withUnsafeBytes { write($0) } }

    // Members that are left out when nil, as `JSONEncoder` leaves out nil optionals.
    @_disfavoredOverload public mutating func field(_ name: String, _ value: String?) { if let value { key(name); string(value) } }
    @_disfavoredOverload public mutating func field<I: BinaryInteger>(_ name: String, _ value: I?) { if let value { key(name); int(value) } }
    @_disfavoredOverload public mutating func field(_ name: String, _ value: Bool?) { if let value { key(name); bool(value) } }
    @_disfavoredOverload public mutating func field(_ name: String, _ value: Double?) { if let value { key(name); double(value) } }
    // The same, named by a literal (`key(_: StaticString)`).
    public mutating func field(_ name: StaticString, _ value: String?) { if let value { key(name); string(value) } }
    public mutating func field<I: BinaryInteger>(_ name: StaticString, _ value: I?) { if let value { key(name); int(value) } }
    public mutating func field(_ name: StaticString, _ value: Bool?) { if let value { key(name); bool(value) } }
    public mutating func field(_ name: StaticString, _ value: Double?) { if let value { key(name); double(value) } }

    /// `{"a":"1","b":"2"}` with keys sorted.
    public mutating func stringMap(_ map: [String: String]) {
        beginObject()
        if map.count < 2 {
            // Nothing to sort (most runs have one param or none): no sorted copy made.
            for (name, value) in map { key(name); string(value) }
        } else {
            for (name, value) in map.sorted(by: { $0.key < $1.key }) { key(name); string(value) }
        }
        endObject()
    }

    /// `["a","b"]`.
    public mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    /// Makes room for `count` more bytes, at least doubling (zeros, written over later).
    private mutating func grow(_ count: Int) {
        buffer.append(contentsOf: repeatElement(0, count: Swift.max(count, buffer.count)))
    }

    /// Writes at most `count` bytes where the JSON ends: `body` gets the place and returns how
    /// many it wrote. Room is made first, so a write is no `append`.
    @inline(__always)
    private mutating func writing(atMost count: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        if buffer.count - length < count { grow(count) }
        let at = length
        length += buffer.withUnsafeMutableBufferPointer { body($0.baseAddress.unsafelyUnwrapped + at) }
    }

    private mutating func write(_ byte: UInt8) {
        if length == buffer.count { grow(1) }
        buffer[length] = byte
        length += 1
    }

    private mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        writing(atMost: bytes.count) { out in
            UnsafeMutableRawPointer(out).copyMemory(from: base, byteCount: bytes.count)
            return bytes.count
        }
    }

    private mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// A JSON string literal, as `appendString` writes it: quotes and the text in one go where
    /// nothing needs an escape (every key, most values).
    private mutating func writeString(_ value: String) {
        var value = value
        let plain = value.withUTF8 { units in
            if units.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) { return false }
            writing(atMost: units.count + 2) { out in
                out[0] = UInt8(ascii: "\"")
                if let base = units.baseAddress { (out + 1).update(from: base, count: units.count) }
                out[units.count + 1] = UInt8(ascii: "\"")
                return units.count + 2
            }
            return true
        }
        guard !plain else { return }
        var escaped: [UInt8] = []
        Self.appendString(value, to: &escaped)
        escaped.withUnsafeBytes { write($0) }
    }

    /// An integer's decimal digits, in one go (beyond `UInt64`, `String`'s).
    private mutating func writeInteger<I: BinaryInteger>(_ value: I) {
        guard let magnitude64 = UInt64(exactly: value.magnitude) else { return write(String(value)) }
        writing(atMost: 21) { out in
            var magnitude = magnitude64
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for 20 digits
            var count = 0
            withUnsafeMutableBytes(of: &digits) { buffer in
                repeat {
                    buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                    magnitude /= 10
                    count += 1
                } while magnitude > 0
                let sign = value < 0 ? 1 : 0
                if sign == 1 { out[0] = UInt8(ascii: "-") }
                UnsafeMutableRawPointer(out + sign).copyMemory(from: buffer.baseAddress.unsafelyUnwrapped + (24 - count), byteCount: count)
                count += sign
            }
            return count
        }
    }

    /// Appends a JSON string literal: quotes, backslashes and control characters escaped.
    public static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { units in
            // Most strings (every key, most values) need no escape: one copy, not a check per byte.
            if units.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) {
                appendEscaped(units, to: &bytes)
            } else {
                bytes.append(contentsOf: units)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ units: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        for unit in units {
            switch unit {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(unit)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(unit)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(unit >> 4)], hex[Int(unit & 0xF)]])
            default: bytes.append(unit)
            }
        }
    }
}

extension TransitionDetail {
    /// The detail as compact JSON, keys sorted, absent fields left out: the text `JSONEncoder`
    /// with sorted keys gives, written by hand for the path of every transition.
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("attempt", attempt)
        json.field("backoff", backoff)
        json.field("by", by)
        json.field("cpuSystem", cpuSystem)
        json.field("cpuUser", cpuUser)
        json.field("debounce", debounce)
        json.field("error", error)
        json.field("exitCode", exitCode)
        json.field("leftovers", leftovers)
        if let locks {
            json.key("locks")
            json.beginArray()
            for lock in locks { json.string(lock) }
            json.endArray()
        }
        json.field("memoryPeak", memoryPeak)
        json.field("pgid", pgid)
        json.field("reason", reason)
        json.field("replacedBy", replacedBy)
        if let replaces {
            json.key("replaces")
            json.beginArray()
            for id in replaces { json.int(id) }
            json.endArray()
        }
        json.field("signal", signal)
        json.field("via", via)
        json.endObject()
    }
}

extension JSONWriter {
    /// `JSONEncoder` as the wire's hand-written lines write (no escaped slashes), for the rare
    /// requests and answers they leave to it.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()

    /// A request id, left out when nil: a number or a string, as `RequestID` encodes.
    mutating func field(_ name: String, _ id: RequestID?) {
        guard let id else { return }
        key(name)
        switch id {
        case let .number(number): int(number)
        case let .text(text): string(text)
        }
    }
}
