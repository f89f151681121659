import BatonEngine
/// Finds keys written twice in one object of a JSON or JSON5 text. Foundation's decoder keeps
/// one of them silently (the first), so a config with `timeout` twice would run with whichever it
/// kept, and a request with `"params":{"a":"1","a":"2"}` would be checked and run with `1` while
/// its sender may believe `2`; batond refuses both instead, naming the key. A scanner of its own,
/// not a second parser: strings (both quotes, every escape decoded, so `"\u0061"` is `a`),
/// comments, identifiers as keys, and nesting; everything else is left to the decoder, which has
/// read the text already or reads it next. Keys compare as Swift strings, as the decoder's do
/// (`é` and `e\u0301` are one key).
public enum DuplicateKeys {
    /// Each key that appears twice, as a path: `actions.hello.timeout`.
    public static func find(in bytes: [UInt8]) -> [String] {
        var scanner = Scanner(bytes: bytes)
        return scanner.run()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        /// Open objects and arrays: for objects, the keys seen and the path to them.
        var stack: [(isObject: Bool, keys: Set<String>, path: String)] = []
        var found: [String] = []
        /// The last key read in the innermost object, waiting for its ':'.
        var pendingKey: String?
        /// The key whose value is being read (what a nested object's path adds).
        var valueKey: String?

        init(bytes: [UInt8]) { self.bytes = bytes }

        /// Whether a string or identifier here is a key: in an object, before its ':'.
        var atKey: Bool { stack.last?.isObject == true && valueKey == nil }

        mutating func run() -> [String] {
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "/"):
                    while index < bytes.count, bytes[index] != 10 { index += 1 }
                case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "*"):
                    index += 2
                    while index + 1 < bytes.count, !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                    index += 2
                case UInt8(ascii: "\""), UInt8(ascii: "'"):
                    if atKey { pendingKey = string(quote: byte) } else { skipString(quote: byte) }
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    let path = [stack.last?.path ?? "", valueKey ?? ""].filter { !$0.isEmpty }.joined(separator: ".")
                    stack.append((byte == UInt8(ascii: "{"), [], path))
                    valueKey = nil
                    index += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    _ = stack.popLast()
                    valueKey = nil
                    index += 1
                case UInt8(ascii: ":"):
                    if let key = pendingKey, !stack.isEmpty {
                        if !stack[stack.count - 1].keys.insert(key).inserted {
                            found.append([stack[stack.count - 1].path, key].filter { !$0.isEmpty }.joined(separator: "."))
                        }
                        valueKey = key
                    }
                    pendingKey = nil
                    index += 1
                case UInt8(ascii: ","):
                    valueKey = nil
                    index += 1
                default:
                    if isIdentifierStart(byte), atKey {
                        let start = index
                        while index < bytes.count, isIdentifierPart(bytes[index]) { index += 1 }
                        pendingKey = String(decoding: bytes[start..<index], as: UTF8.self)
                    } else {
                        index += 1
                    }
                }
            }
            return found
        }

        private func peek(_ ahead: Int) -> UInt8? { index + ahead < bytes.count ? bytes[index + ahead] : nil }

        /// Past a string that is not a key, without building it.
        private mutating func skipString(quote: UInt8) {
            index += 1
            while index < bytes.count, bytes[index] != quote {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            index += 1
        }

        /// A key string, its escapes decoded as the decoder decodes them.
        private mutating func string(quote: UInt8) -> String {
            index += 1
            var text = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                text.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while index < bytes.count, bytes[index] != quote {
                guard bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count else {
                    raw.append(bytes[index])
                    index += 1
                    continue
                }
                flush()
                index += 1
                if let scalar = escape() { text.append(scalar) }
            }
            flush()
            index += 1
            return String(text)
        }

        /// The scalar of the escape whose letter is at `index`, leaving `index` past it; nil for a
        /// JSON5 line continuation (a backslash before a line end), or for an escape the decoder
        /// refuses anyway.
        private mutating func escape() -> Unicode.Scalar? {
            let letter = bytes[index]
            index += 1
            switch letter {
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "v"): return "\u{0B}"
            case UInt8(ascii: "0"): return "\0"
            case UInt8(ascii: "x"): return hex(2).flatMap(Unicode.Scalar.init)
            case UInt8(ascii: "u"): return unicodeEscape()
            case 10: return nil
            case 13:
                if peek(0) == 10 { index += 1 }
                return nil
            default:
                index -= 1
                let scalar = nextScalar()
                return scalar == "\u{2028}" || scalar == "\u{2029}" ? nil : scalar
            }
        }

        /// `\uXXXX`, joined with a following `\uXXXX` when the two are a surrogate pair.
        private mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let high = hex(4) else { return nil }
            guard (0xD800...0xDBFF).contains(high) else { return Unicode.Scalar(high) }
            guard peek(0) == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else { return nil }
            index += 2
            guard let low = hex(4), (0xDC00...0xDFFF).contains(low) else { return nil }
            return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        }

        private mutating func hex(_ digits: Int) -> UInt32? {
            guard index + digits <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + digits], as: UTF8.self), radix: 16) else {
                return nil
            }
            index += digits
            return value
        }

        /// The (maybe multi-byte) scalar at `index`, escaped only for its own sake (`\'`, `\é`).
        private mutating func nextScalar() -> Unicode.Scalar? {
            let length = switch bytes[index] {
            case 0xF0...: 4
            case 0xE0...: 3
            case 0xC0...: 2
            default: 1
            }
            let end = min(index + length, bytes.count)
            defer { index = end }
            return String(decoding: bytes[index..<end], as: UTF8.self).unicodeScalars.first
        }

        private func isIdentifierStart(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
        }

        private func isIdentifierPart(_ byte: UInt8) -> Bool {
            isIdentifierStart(byte) || (byte >= 0x30 && byte <= 0x39)
        }
    }
}
