import BatonCore

/// What `ConfigSyntax` says of the place it stops: the path to the value, what was found, how a byte is shown.
extension ConfigSyntax {
    /// The text after the file's value.
    func afterEnd() -> Problem {
        let place = ConfigError.Place(bytes, offset: valueEnd)
        let last = bytes[valueEnd] == 0x7D || bytes[valueEnd] == 0x5D ? "closing \(Self.shown(bytes[valueEnd]))" : "value"
        return Problem(offset: index, message: "expected the end of the file after the config's \(last) at line \(place.line), column \(place.column), found \(found())")
    }

    /// What the value about to be read adds to its container's path.
    var nextComponent: String {
        guard let top = open.last else { return "" }
        if !top.isObject { return "[\(top.items)]" }
        return (open.count == 1 ? "" : ".") + Self.clipped(top.key)
    }

    /// The path of the value the first `depth` open containers lead to, as config errors name
    /// fields (`actions.hello.exec[1]`), then `top`'s field when given; deep paths are elided.
    func path(_ depth: Int, then top: Container? = nil) -> String {
        var components = open[1..<depth].map(\.component)
        if let top { components.append((depth > 1 ? "." : "") + Self.clipped(top.key)) }
        if components.count > 24 { components.replaceSubrange(8..<(components.count - 8), with: ["…"]) }
        return components.joined()
    }

    static func clipped(_ key: String) -> String { key.count > 80 ? key.prefix(80) + "…" : key }

    /// The path of the value about to be read.
    var valuePath: String {
        guard let top = open.last else { return "" }
        return top.isObject ? path(open.count, then: top) : path(open.count) + "[\(top.items)]"
    }

    /// The value about to be read, in words.
    var valueName: String { open.isEmpty ? "the config" : valuePath }

    var valueWords: String { expect == .item ? "a value or ']'" : "a value" }

    /// The bracket that closes one that `opening` opens, quoted.
    func closing(of opening: UInt8) -> String { opening == 0x7B ? "'}'" : "']'" }

    /// What is at `index`, in words: a name as it is, a printable character quoted, anything
    /// else by its code point (a no-break space looks like a space and is not a blank here).
    func found() -> String {
        let byte = bytes[index]
        if identifierLength(at: index, first: true) != nil {
            var end = index
            while end < bytes.count, end - index < 40, let length = identifierLength(at: end, first: false) { end += length }
            return String(decoding: bytes[index..<end], as: UTF8.self)
        }
        if byte < 0x80 { return Self.shown(byte) }
        let scalar = String(decoding: bytes[index..<min(index + 4, bytes.count)], as: UTF8.self).unicodeScalars.first!
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        let names: [UInt32: String] = [0xA0: "a no-break space", 0x2028: "a line separator", 0x2029: "a paragraph separator",
                                       0x3000: "an ideographic space", 0xFEFF: "a byte order mark", 0x201C: "a curly quote", 0x201D: "a curly quote"]
        return code + (names[scalar.value].map { " (\($0))" } ?? "")
    }

    /// An ASCII byte as a message shows it: `'x'`, `"'"`, or `U+0007` for a control character.
    static func shown(_ byte: UInt8) -> String {
        if byte == 0x27 { return "\"'\"" }
        if byte >= 0x20 && byte < 0x7F { return "'\(String(decoding: [byte], as: UTF8.self))'" }
        return "U+00" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
    }
}
