/// Finds keys written twice in one object of a JSON5 text. Foundation's decoder keeps one of
/// them silently, so a config with `timeout` twice would run with whichever it kept; batond
/// refuses it instead, naming the key. A scanner of its own: strings (both quotes, escapes),
/// comments, identifiers as keys, and nesting; everything else is left to the decoder.
enum DuplicateKeys {
    /// Each key that appears twice, as a path: `actions.hello.timeout`.
    static func find(in bytes: [UInt8]) -> [String] {
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
                    let text = string(quote: byte)
                    if stack.last?.isObject == true, valueKey == nil { pendingKey = text }
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
                        if stack[stack.count - 1].keys.contains(key) {
                            found.append([stack[stack.count - 1].path, key].filter { !$0.isEmpty }.joined(separator: "."))
                        }
                        stack[stack.count - 1].keys.insert(key)
                        valueKey = key
                    }
                    pendingKey = nil
                    index += 1
                case UInt8(ascii: ","):
                    valueKey = nil
                    index += 1
                default:
                    if isIdentifierStart(byte), stack.last?.isObject == true, valueKey == nil {
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

        private mutating func string(quote: UInt8) -> String {
            index += 1
            var text: [UInt8] = []
            while index < bytes.count, bytes[index] != quote {
                if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
                text.append(bytes[index])
                index += 1
            }
            index += 1
            return String(decoding: text, as: UTF8.self)
        }

        private func isIdentifierStart(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
        }

        private func isIdentifierPart(_ byte: UInt8) -> Bool {
            isIdentifierStart(byte) || (byte >= 0x30 && byte <= 0x39)
        }
    }
}
