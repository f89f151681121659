import BatonEngine
import FoundationEssentials

/// Writes compact JSON by hand for the values on hot paths (every response line, every
/// transition's detail column), where Foundation's `JSONEncoder` cost more than the rest of the
/// work. The tests check its output decodes to what `JSONEncoder`'s does.
public struct JSONWriter {
    /// The JSON so far, as UTF-8.
    public private(set) var bytes: [UInt8] = []
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

    public init() { bytes.reserveCapacity(256) }

    /// A writer with room for `capacity` bytes (a response line with a run takes about 500).
    public init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// The JSON so far, as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() { valueStart(); bytes.append(UInt8(ascii: "{")); open() }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); close() }
    public mutating func beginArray() { valueStart(); bytes.append(UInt8(ascii: "[")); open() }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); close() }

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
        Self.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    /// Starts a member named by a literal, copied as it is (a name in the code needs no escape):
    /// most of a response's keys. Its comma, quotes, name and colon go in one append, made on the
    /// stack first: an append each cost their checks of the array (67 keys a run, issue 39).
    public mutating func key(_ name: StaticString) {
        let comma = memberComma()
        name.withUTF8Buffer { units in
            assert(!units.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }, "a key that needs escaping")
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: units.count + 4) { buffer in
                var end = 0
                if comma { buffer[0] = UInt8(ascii: ","); end = 1 }
                buffer[end] = UInt8(ascii: "\"")
                end += 1
                if let base = units.baseAddress { (buffer.baseAddress! + end).initialize(from: base, count: units.count) }
                end += units.count
                buffer[end] = UInt8(ascii: "\"")
                buffer[end + 1] = UInt8(ascii: ":")
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<(end + 2)]))
            }
        }
        afterKey = true
    }

    /// A comma unless this is the first member of the innermost object or array (none at the top).
    private mutating func memberStart() {
        if memberComma() { bytes.append(UInt8(ascii: ",")) }
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

    public mutating func string(_ value: String) { valueStart(); Self.appendString(value, to: &bytes) }
    public mutating func int<I: BinaryInteger>(_ value: I) { valueStart(); Self.appendInteger(value, to: &bytes) }
    public mutating func bool(_ value: Bool) { valueStart(); bytes.append(contentsOf: value ? Self.trueBytes : Self.falseBytes) }
    public mutating func double(_ value: Double) { valueStart(); bytes.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8) }
    /// Text that is already JSON.
    public mutating func raw(_ json: String) { valueStart(); bytes.append(contentsOf: json.utf8) }
    /// A value already written as JSON (a run's snapshot rendered once for several lines).
    public mutating func raw(_ json: [UInt8]) { valueStart(); bytes.append(contentsOf: json) }

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

    private static let trueBytes = Array("true".utf8), falseBytes = Array("false".utf8)

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

    /// Appends an integer's decimal digits.
    static func appendInteger<I: BinaryInteger>(_ value: I, to bytes: inout [UInt8]) {
        guard let magnitude64 = UInt64(exactly: value.magnitude) else { return bytes.append(contentsOf: String(value).utf8) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = magnitude64
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - count)...]))
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
