extension ConfigError {
    /// A place in a config file, and its line as shown under a message.
    struct Place: Equatable, Sendable {
        /// From 1.
        var line: Int
        /// From 1, in characters (a tab is one).
        var column: Int
        /// The line, cut around the column when long, with control characters shown as `?`.
        var text: String
        /// What puts a caret under the column in `text`: a space per character, a tab per tab.
        var indent: String

        /// The widest part of a line shown, in characters.
        static let shownWidth = 100

        init(_ bytes: [UInt8], offset: Int) {
            let offset = min(offset, bytes.count)
            let start = bytes[..<offset].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
            var end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.count
            if end > start, bytes[end - 1] == 0x0D { end -= 1 }
            line = bytes[..<start].count { $0 == 0x0A } + 1
            let before = Array(String(decoding: bytes[start..<min(offset, end)], as: UTF8.self))
            let after = Array(String(decoding: bytes[min(offset, end)..<end], as: UTF8.self))
            column = before.count + 1
            // Long lines (a config on one line) are shown from a little before the column.
            let from = max(0, before.count - Self.shownWidth * 2 / 3)
            let shownBefore = before[from...]
            let shownAfter = after.prefix(max(Self.shownWidth - shownBefore.count, 1))
            let text = (from > 0 ? "…" : "") + String(shownBefore) + String(shownAfter) + (shownAfter.count < after.count ? "…" : "")
            self.text = String(String.UnicodeScalarView(text.unicodeScalars.map { Self.isShown($0) ? $0 : "?" }))
            indent = (from > 0 ? " " : "") + String(shownBefore.map { $0 == "\t" ? "\t" : " " })
        }

        /// Whether a terminal shows the scalar as it is (not a control character or a bidirectional override).
        static func isShown(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x09: true
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: false
            default: true
            }
        }
    }
}
