import BatonEngine

/// The numbers of a JSON text that its grammar refuses. Foundation's decoder was seen to accept a
/// request with `"limit":2e-` (a number with an exponent's sign and no digits) in a field it then
/// ignores, so a malformed line was answered as if it were fine; the reference path checks a line
/// with this first. Strict JSON (RFC 8259): `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
public enum JSONNumbers {
    /// The first number token in `bytes` (outside strings) that is not a JSON number, as written.
    public static func firstMalformed(in bytes: [UInt8]) -> String? {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index = endOfString(bytes, from: index + 1)
            } else if byte == UInt8(ascii: "-") || isDigit(byte) {
                let start = index
                while index < bytes.count, isNumberPart(bytes[index]) { index += 1 }
                if !isNumber(bytes[start..<index]) { return String(decoding: bytes[start..<index], as: UTF8.self) }
            } else if isLetter(byte) {
                // `true`, `false`, `null` (or a word the decoder refuses itself): not a number.
                while index < bytes.count, isLetter(bytes[index]) || isDigit(bytes[index]) { index += 1 }
            } else {
                index += 1
            }
        }
        return nil
    }

    /// Whether `token` is one JSON number, whole.
    static func isNumber(_ token: ArraySlice<UInt8>) -> Bool {
        var rest = token[...]
        if rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
        guard let first = rest.first, isDigit(first) else { return false }
        let integer = rest.prefix(while: isDigit)
        if first == UInt8(ascii: "0") && integer.count > 1 { return false }
        rest = rest.dropFirst(integer.count)
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            let fraction = rest.prefix(while: isDigit)
            guard !fraction.isEmpty else { return false }
            rest = rest.dropFirst(fraction.count)
        }
        if let e = rest.first, e | 0x20 == UInt8(ascii: "e") {
            rest = rest.dropFirst()
            if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { rest = rest.dropFirst() }
            let exponent = rest.prefix(while: isDigit)
            guard !exponent.isEmpty else { return false }
            rest = rest.dropFirst(exponent.count)
        }
        return rest.isEmpty
    }

    /// The index after the string whose body starts at `index` (after its opening quote).
    private static func endOfString(_ bytes: [UInt8], from index: Int) -> Int {
        var index = index
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\\") { index += 2; continue }
            if bytes[index] == UInt8(ascii: "\"") { return index + 1 }
            index += 1
        }
        return index
    }

    private static func isNumberPart(_ byte: UInt8) -> Bool {
        isDigit(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte | 0x20 == UInt8(ascii: "e")
    }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
}
