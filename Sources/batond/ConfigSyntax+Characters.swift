/// The characters `ConfigSyntax` reads as Foundation's JSON5 reader does: names, numbers, digits.
extension ConfigSyntax {
    func isNumberPart(_ byte: UInt8) -> Bool {
        Self.isDigit(byte) || Self.isLetter(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
    }

    /// The bytes of the name character at `at` (a letter of any script, `_`, `$`, an escape;
    /// digits and marks after the first), or nil where none is.
    func identifierLength(at: Int, first: Bool) -> Int? {
        let byte = bytes[at]
        if byte == 0x5C {
            // `\u00e9` (and, as the reader takes it, `\x41`): a character of the name written as an escape.
            guard at + 1 < bytes.count else { return nil }
            let digits = bytes[at + 1] == UInt8(ascii: "u") ? 4 : bytes[at + 1] == UInt8(ascii: "x") ? 2 : 0
            guard digits > 0, at + 2 + digits <= bytes.count,
                  let value = UInt32(String(decoding: bytes[(at + 2)..<(at + 2 + digits)], as: UTF8.self), radix: 16),
                  let scalar = Unicode.Scalar(value), Self.fitsName(scalar, first: first) else { return nil }
            return 2 + digits
        }
        let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
        guard at + length <= bytes.count, let scalar = String(decoding: bytes[at..<(at + length)], as: UTF8.self).unicodeScalars.first,
              Self.fitsName(scalar, first: first) else { return nil }
        return length
    }

    /// Whether a name may hold the character (first: start with it): a letter of any script,
    /// `_` or `$`; after the first, digits and marks too.
    static func fitsName(_ scalar: Unicode.Scalar, first: Bool) -> Bool {
        if scalar.isASCII {
            let byte = UInt8(scalar.value)
            return isLetter(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || (!first && isDigit(byte))
        }
        return first ? scalar.properties.isIDStart : scalar.properties.isIDContinue
    }


    /// Whether a number token ends in an exponent's sign with no digits after it (`1e-`, `2.E+`):
    /// Foundation's reader reads past the token for those digits and traps (found by fuzzing).
    static func hasBareExponent(_ token: ArraySlice<UInt8>) -> Bool {
        var digits = token.drop { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") }
        guard digits.count >= 3, let sign = digits.popLast(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"),
              let e = digits.popLast(), e | 0x20 == UInt8(ascii: "e") else { return false }
        // What is left is a decimal mantissa: digits with at most one dot, and a digit somewhere.
        let dot = UInt8(ascii: ".")
        return digits.contains(where: isDigit) && digits.allSatisfy { isDigit($0) || $0 == dot } && digits.count { $0 == dot } <= 1
    }

    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    static func isHex(_ byte: UInt8) -> Bool { isDigit(byte) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f")) }
}
