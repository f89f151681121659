
/// The text of a single-flight key: the action's name, then ` name=value` for each key param in
/// the action's order (a bare ` name` for one without a value), every part percent-escaped.
///
/// The text is an injective function of (action, each key param's name and value): the
/// separators (space, `=`) and `%` never appear unescaped inside a part, so a key splits back
/// into its parts one way only, and unescaping gives each part's bytes back. Control characters
/// are escaped too, so that a key prints as one readable line. Swift compares strings by
/// canonical equivalence (`"é" == "e\u{301}"`) while a process receives bytes, so a part that is
/// not in NFC has every non-ASCII character escaped as well, and no combining mark is left to
/// combine with an ASCII character the key put before it: every key is in NFC, and two keys are
/// equal as Swift strings exactly when their bytes are.
public enum SingleFlightKey {
    /// One key param as the key holds it: its name and value (nil when the params had none).
    public struct Param: Sendable, Equatable {
        public var name: String
        public var value: String?

        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    /// The key of `action` for params: each of `keyParams`, in that order, with its value.
    public static func make(action: String, keyParams: [String], params: [String: String]) -> String {
        var key = escape(action)
        for name in keyParams {
            key += " " + escape(name)
            if let value = params[name] { key += "=" + escape(value) }
        }
        return key
    }

    /// A part of a key as the key writes it: `%`, space, `=` and control characters (Unicode
    /// category Cc) as `%XX` of their UTF-8 bytes; every non-ASCII character too when the text is
    /// not in NFC; and a combining mark that starts the text or follows an escape (it would
    /// combine with the `=` or hex digit before it: `=` + U+0338 is `≠`, `A` + U+0301 is `Á`).
    /// Text without any of these is unchanged.
    public static func escape(_ text: String) -> String {
        // Most values are plain printable ASCII: nothing to escape, nothing to normalize.
        if text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "=") }) { return text }
        let escapesNonASCII = !isNFC(text)
        var out = ""
        var afterEscape = true
        for scalar in text.unicodeScalars {
            afterEscape = needsEscape(scalar, nonASCII: escapesNonASCII)
                || (afterEscape && scalar.properties.canonicalCombiningClass != .notReordered)
            guard afterEscape else {
                out.unicodeScalars.append(scalar)
                continue
            }
            for byte in String(scalar).utf8 { out += "%" + hexDigit(byte >> 4) + hexDigit(byte & 0xF) }
        }
        return out
    }

    /// The action and key params of a key, unescaped; nil when the text is not a key's.
    public static func parse(_ key: String) -> (action: String, params: [Param])? {
        let parts = key.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard let first = parts.first, let action = unescape(first) else { return nil }
        var params: [Param] = []
        for part in parts.dropFirst() {
            let halves = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(halves[0]), !name.isEmpty else { return nil }
            if halves.count == 1 {
                params.append(Param(name: name, value: nil))
            } else {
                guard let value = unescape(halves[1]) else { return nil }
                params.append(Param(name: name, value: value))
            }
        }
        return (action, params)
    }

    // MARK: Escaping

    private static func needsEscape(_ scalar: Unicode.Scalar, nonASCII: Bool) -> Bool {
        switch scalar {
        case "%", " ", "=": true
        default: scalar.properties.generalCategory == .control || (nonASCII && !scalar.isASCII)
        }
    }

    /// Whether the text is in NFC, so that no other byte sequence is the same text to Swift (the
    /// standard library's own NFC, the one its String comparison uses: no ICU needed).
    private static func isNFC(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 < 0x80 } || text.utf8.elementsEqual(text._nfcCodeUnits)
    }

    private static func hexDigit(_ value: UInt8) -> String {
        String(UnicodeScalar(value < 10 ? 0x30 + value : 0x37 + value))
    }

    /// The bytes of `%XX` escapes put back; nil for a bad escape, an unescaped `%`, or bytes
    /// that are not UTF-8.
    private static func unescape(_ part: Substring.UTF8View) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(part.count)
        var index = part.startIndex
        while index < part.endIndex {
            let byte = part[index]
            index = part.index(after: index)
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = index < part.endIndex ? hexValue(part[index]) : nil else { return nil }
            index = part.index(after: index)
            guard let low = index < part.endIndex ? hexValue(part[index]) : nil else { return nil }
            index = part.index(after: index)
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
