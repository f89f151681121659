import BatonEngine
/// Strict JSON (RFC 8259) over a buffer of bytes, read value by value by `FastRequest` and
/// `FastResponse`. Each reader gives nil (or false) where the bytes are not what it reads, and
/// the caller then gives up on the fast path; so a reader only has to be right when it answers.
struct JSONBytes {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Only whitespace is left.
    mutating func atEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    /// `null` as `.some(nil)`; a value `body` reads as `.some(value)`; nil when neither.
    mutating func optional<T>(_ body: (inout JSONBytes) -> T?) -> T?? {
        if literal("null") { return .some(nil) }
        guard let value = body(&self) else { return nil }
        return .some(value)
    }

    mutating func requestID() -> RequestID? {
        skipSpace()
        if peek() == UInt8(ascii: "\"") { return string().map(RequestID.text) }
        return integer().map(RequestID.number)
    }

    mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// An object of strings, none given twice.
    mutating func stringMap() -> [String: String]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var map: [String: String] = [:]
        if take(UInt8(ascii: "}")) { return map }
        repeat {
            guard let key = string(), take(UInt8(ascii: ":")), let value = string(), map.updateValue(value, forKey: key) == nil
            else { return nil }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}")) ? map : nil
    }

    /// An object, each key given once: `field` reads the value of each key, false when it does
    /// not take that key or its value.
    mutating func object(_ field: (String, inout JSONBytes) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return true }
        // The keys so far, searched in order: an object has a few dozen at most, and a `Set`'s
        // hashing and growth cost more than the whole read of a `status` answer.
        var seen: [String] = []
        repeat {
            guard let key = string(), take(UInt8(ascii: ":")), !seen.contains(key), field(key, &self) else { return false }
            seen.append(key)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    /// An array whose every element `element` reads.
    mutating func array<T>(_ element: (inout JSONBytes) -> T?) -> [T]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var values: [T] = []
        if take(UInt8(ascii: "]")) { return values }
        repeat {
            guard let value = element(&self) else { return nil }
            values.append(value)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? values : nil
    }

    /// A plain integer that fits in `T`.
    mutating func integer<T: FixedWidthInteger>(as type: T.Type) -> T? {
        integer().flatMap { T(exactly: $0) }
    }

    /// A number in JSON's grammar (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`) whose value
    /// is finite, correctly rounded as every reader of JSON rounds it.
    mutating func double() -> Double? {
        skipSpace()
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() > 0 else { return nil }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else { return nil }
        return value
    }

    /// Takes the decimal digits next, and says how many.
    private mutating func digits() -> Int {
        let start = index
        while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    /// A plain integer (`-?[1-9][0-9]*` or `0`) that fits in 64 bits; no fraction, exponent or `-0`.
    mutating func integer() -> Int64? {
        skipSpace()
        let negative = peek() == UInt8(ascii: "-")
        if negative { index += 1 }
        let start = index
        var magnitude: UInt64 = 0
        while let digit = peek(), digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") {
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            magnitude = sum
            index += 1
        }
        let count = index - start
        guard count > 0, !(count > 1 && bytes[start] == UInt8(ascii: "0")), !(negative && magnitude == 0) else { return nil }
        if let next = peek(), next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") { return nil }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// A string: valid UTF-8, no raw control character, every escape decoded (surrogates paired).
    mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        var decoded: [UInt8] = []
        var plainStart = index
        var ascii = true
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: "\""):
                // ASCII is valid UTF-8 as it is: decoding it repairs nothing, and costs less than validating.
                let text = decoded.isEmpty
                    ? ascii ? String(decoding: UnsafeBufferPointer(rebasing: bytes[plainStart..<index]), as: UTF8.self)
                        : String(validating: bytes[plainStart..<index], as: UTF8.self)
                    : String(validating: decoded + bytes[plainStart..<index], as: UTF8.self)
                index += 1
                return text
            case UInt8(ascii: "\\"):
                decoded += bytes[plainStart..<index]
                index += 1
                guard escape(into: &decoded) else { return nil }
                plainStart = index
            case ..<0x20: return nil
            case 0x80...: ascii = false; index += 1
            default: index += 1
            }
        }
        return nil
    }

    /// The escape after a backslash, appended as UTF-8.
    private mutating func escape(into decoded: inout [UInt8]) -> Bool {
        guard let byte = peek() else { return false }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte); return true
        case UInt8(ascii: "b"): decoded.append(0x08); return true
        case UInt8(ascii: "f"): decoded.append(0x0C); return true
        case UInt8(ascii: "n"): decoded.append(0x0A); return true
        case UInt8(ascii: "r"): decoded.append(0x0D); return true
        case UInt8(ascii: "t"): decoded.append(0x09); return true
        case UInt8(ascii: "u"): break
        default: return false
        }
        guard let unit = hex4() else { return false }
        var scalar = UInt32(unit)
        if (0xD800..<0xDC00).contains(unit) {
            guard literal("\\u", skippingSpace: false), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return false }
            scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        }
        guard let value = Unicode.Scalar(scalar) else { return false }
        decoded += Array(String(Character(value)).utf8)
        return true
    }

    private mutating func hex4() -> UInt16? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = Self.hexValue(byte) else { return nil }
            value = value << 4 | UInt16(digit)
        }
        index += 4
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Skips whitespace, then takes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    /// Takes `word` if it is next (after whitespace, unless told otherwise).
    mutating func literal(_ word: StaticString, skippingSpace: Bool = true) -> Bool {
        if skippingSpace { skipSpace() }
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
        index += count
        return true
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }
}
