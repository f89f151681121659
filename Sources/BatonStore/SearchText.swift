import BatonCore

/// The text a search looks for, folded as the trigram index folds it (case ignored), and how a
/// line is tested for it: byte by byte for ASCII text, through Unicode lowercasing otherwise.
struct SearchText: Sendable {
    let text: String
    /// The folded bytes looked for.
    let folded: [UInt8]
    let isASCII: Bool

    init(_ text: String) {
        self.text = text
        isASCII = text.utf8.allSatisfy { $0 < 0x80 }
        folded = isASCII ? text.utf8.map(Self.lower) : Array(text.lowercased().utf8)
    }

    /// Whether the index can be asked: the trigram tokenizer needs three characters.
    var usesIndex: Bool { text.unicodeScalars.count >= 3 }

    /// The FTS5 query: the text as one phrase (a substring, with the trigram tokenizer).
    var matchQuery: String { "\"" + text.replacingEvery("\"", with: "\"\"") + "\"" }

    /// A LIKE pattern for `ESCAPE '\'` that finds the text anywhere (shorter texts, params).
    var likePattern: String {
        var pattern = "%"
        for character in text {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern + "%"
    }

    /// Where the text first starts in `line` (a byte offset into it), or nil.
    func firstMatch(in line: ArraySlice<UInt8>) -> Int? {
        guard !folded.isEmpty else { return nil }
        if isASCII { return Self.find(folded, in: line, fold: true) }
        let lowered = Array(String(decoding: line, as: UTF8.self).lowercased().utf8)
        guard let at = Self.find(folded, in: lowered[...], fold: false) else { return nil }
        // The lowered line's offsets differ from the line's only where case changed a character's
        // length: the start of the excerpt is a guide, never an index into another buffer.
        return min(at, max(line.count - 1, 0))
    }

    /// Whether a param value holds the text.
    func isIn(_ value: String) -> Bool { firstMatch(in: Array(value.utf8)[...]) != nil }

    static func lower(_ byte: UInt8) -> UInt8 { byte &- 0x41 < 26 ? byte | 0x20 : byte }

    private static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>, fold: Bool) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        let first = needle[0]
        var index = haystack.startIndex
        let last = haystack.endIndex - needle.count
        while index <= last {
            let byte = fold ? lower(haystack[index]) : haystack[index]
            if byte == first {
                var matched = 1
                while matched < needle.count {
                    let next = haystack[index + matched]
                    if (fold ? lower(next) : next) != needle[matched] { break }
                    matched += 1
                }
                if matched == needle.count { return index - haystack.startIndex }
            }
            index += 1
        }
        return nil
    }
}

/// A run's kept output read as lines, chunk after chunk, numbering them from 1 and noting where
/// bytes were dropped between two chunks (the run wrote past `output.keep`): the lines that hold
/// a `SearchText`, the first `maxLines` of them kept.
struct MatchingLines {
    let search: SearchText
    let maxLines: Int
    private(set) var lines: [MatchedLine] = []
    private(set) var count = 0
    private var number = 0
    private var partial: [UInt8] = []
    private var end: Int64 = 0
    private var cut = false
    private var partialAfterCut = false

    init(_ search: SearchText, maxLines: Int) {
        self.search = search
        self.maxLines = maxLines
    }

    /// Takes the next chunk, which starts at `start` in everything the run wrote.
    mutating func take(_ bytes: [UInt8], at start: Int64) {
        if start > end {
            // Bytes were dropped here: what came before ends a line, and the lines after are marked.
            if !partial.isEmpty { finishLine() }
            cut = true
        }
        end = start + Int64(bytes.count)
        var rest = bytes[...]
        while let newline = rest.firstIndex(of: 10) {
            if partial.isEmpty {
                check(rest[rest.startIndex..<newline], afterCut: cut)
            } else {
                partial.append(contentsOf: rest[rest.startIndex..<newline])
                finishLine()
            }
            rest = rest[(newline + 1)...]
        }
        if !rest.isEmpty {
            if partial.isEmpty { partialAfterCut = cut }
            partial.append(contentsOf: rest)
        }
    }

    /// The last line, without a newline at its end.
    mutating func finish() {
        if !partial.isEmpty { finishLine() }
    }

    private mutating func finishLine() {
        let line = partial
        partial = []
        check(line[...], afterCut: partialAfterCut)
    }

    private mutating func check(_ line: ArraySlice<UInt8>, afterCut: Bool) {
        number += 1
        var line = line
        if line.last == 13 { line = line.dropLast() }
        guard let at = search.firstMatch(in: line) else { return }
        count += 1
        guard lines.count < maxLines else { return }
        lines.append(MatchedLine(line: number, text: Self.excerpt(line, around: at), afterCut: afterCut ? true : nil))
    }

    /// The line, or `MatchedLine.maxBytes` of it from a little before the match, `…` where cut.
    static func excerpt(_ line: ArraySlice<UInt8>, around at: Int) -> String {
        let limit = MatchedLine.maxBytes
        guard line.count > limit else { return String(decoding: line, as: UTF8.self) }
        let from = min(max(at - limit / 4, 0), line.count - limit)
        let piece = line.dropFirst(from).prefix(limit)
        return (from > 0 ? "…" : "") + String(decoding: piece, as: UTF8.self) + (from + limit < line.count ? "…" : "")
    }
}
