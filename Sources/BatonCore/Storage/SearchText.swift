import BatonEngine
import BatonWire
import Glibc

/// The text a search looks for, folded as the trigram index folds it (case ignored), and how a
/// line is tested for it: byte by byte for ASCII text, through Unicode lowercasing otherwise.
public struct SearchText: Sendable {
    public let text: String
    /// The folded bytes looked for.
    public let folded: [UInt8]
    public let isASCII: Bool

    public init(_ text: String) {
        self.text = text
        isASCII = text.utf8.allSatisfy { $0 < 0x80 }
        folded = isASCII ? text.utf8.map(Self.lower) : Array(text.lowercased().utf8)
    }

    /// Whether the index can be asked: the trigram tokenizer needs three characters.
    public var usesIndex: Bool { text.unicodeScalars.count >= 3 }

    /// The FTS5 query: the text as one phrase (a substring, with the trigram tokenizer).
    public var matchQuery: String { "\"" + text.replacingEvery("\"", with: "\"\"") + "\"" }

    /// A LIKE pattern for `ESCAPE '\'` that finds the text anywhere (shorter texts, params).
    public var likePattern: String { "%" + Self.escapedForLike(text) + "%" }

    /// A LIKE pattern (`ESCAPE '\'`) that every value holding the text matches, whatever a
    /// database folds beyond ASCII (SQLite's `LIKE` folds ASCII only; PostgreSQL's `ILIKE` folds
    /// as the database's collation says): `likePattern` for an ASCII text; otherwise its
    /// lowercased text's ASCII `pieces` in order, `%` for the rest. What it finds is checked
    /// with `isIn`, which decides.
    public var widePattern: String {
        guard !isASCII else { return likePattern }
        return "%" + pieces.map { Self.escapedForLike($0) + "%" }.joined()
    }

    /// The pieces of the lowercased text that every value holding it holds as they are, case
    /// aside, in order: its ASCII runs, cut at each `i` and `k` (which `İ` and the Kelvin sign
    /// lowercase to, the only characters beyond ASCII that lowercase into it).
    public var pieces: [String] {
        guard !isASCII else { return [text] }
        var pieces: [String] = [], piece = ""
        for scalar in text.lowercased().unicodeScalars {
            if scalar.isASCII && scalar != "i" && scalar != "k" {
                piece.unicodeScalars.append(scalar)
            } else if !piece.isEmpty {
                pieces.append(piece)
                piece = ""
            }
        }
        return piece.isEmpty ? pieces : pieces + [piece]
    }

    private static func escapedForLike(_ piece: String) -> String {
        var escaped = ""
        for character in piece {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }

    /// Where the text first starts in `line` (a byte offset into it), or nil.
    public func firstMatch(in line: ArraySlice<UInt8>) -> Int? {
        guard !folded.isEmpty else { return nil }
        if isASCII { return Self.find(folded, in: line, fold: true) }
        let lowered = Array(String(decoding: line, as: UTF8.self).lowercased().utf8)
        guard let at = Self.find(folded, in: lowered[...], fold: false) else { return nil }
        // The lowered line's offsets differ from the line's only where case changed a character's
        // length: the start of the excerpt is a guide, never an index into another buffer.
        return min(at, max(line.count - 1, 0))
    }

    /// Whether a param value holds the text.
    public func isIn(_ value: String) -> Bool { firstMatch(in: Array(value.utf8)[...]) != nil }

    public static func lower(_ byte: UInt8) -> UInt8 { byte &- 0x41 < 26 ? byte | 0x20 : byte }

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
public struct MatchingLines {
    public let search: SearchText
    public let maxLines: Int
    public private(set) var lines: [MatchedLine] = []
    public private(set) var count = 0
    private var number = 0
    private var partial: [UInt8] = []
    private var end: Int64 = 0
    private var cut = false
    private var partialAfterCut = false

    public init(_ search: SearchText, maxLines: Int) {
        self.search = search
        self.maxLines = maxLines
    }

    /// Takes the next chunk, which starts at `start` in everything the run wrote.
    public mutating func take(_ bytes: [UInt8], at start: Int64) {
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

    /// Takes the next chunk with its ASCII-folded copy (SQLite's `lower()`: the same length, the
    /// same offsets), for an ASCII text: the lines that hold it are found with `memmem` over the
    /// copy and newlines counted with `memchr`, so a run's output is read at the speed of C; a
    /// line that goes on from one chunk into the next is checked whole, as `take` does.
    public mutating func take(_ bytes: [UInt8], folded: [UInt8], at start: Int64) {
        guard search.isASCII, folded.count == bytes.count else { return take(bytes, at: start) }
        if start > end {
            if !partial.isEmpty { finishLine() }
            cut = true
        }
        end = start + Int64(bytes.count)
        var position = 0
        if !partial.isEmpty {
            guard let newline = SearchBytes.index(of: 10, in: bytes, from: 0) else { return partial.append(contentsOf: bytes) }
            partial.append(contentsOf: bytes[..<newline])
            finishLine()
            position = newline + 1
        }
        while let hit = SearchBytes.find(search.folded, in: folded, from: position) {
            let lineStart = (SearchBytes.lastIndex(of: 10, in: bytes, from: position, before: hit) ?? (position - 1)) + 1
            number += SearchBytes.count(10, in: bytes, position..<lineStart)
            guard let lineEnd = SearchBytes.index(of: 10, in: bytes, from: hit) else {
                // The line goes on in the next chunk: checked whole then.
                partial = Array(bytes[lineStart...])
                partialAfterCut = cut
                return
            }
            number += 1
            count += 1
            if lines.count < maxLines {
                var line = bytes[lineStart..<lineEnd]
                if line.last == 13 { line = line.dropLast() }
                lines.append(MatchedLine(line: number, text: Self.excerpt(line, around: hit - lineStart), afterCut: cut ? true : nil))
            }
            position = lineEnd + 1
        }
        let last = SearchBytes.lastIndex(of: 10, in: bytes, from: position, before: bytes.count)
        if let last { number += SearchBytes.count(10, in: bytes, position..<(last + 1)) }
        let rest = last.map { $0 + 1 } ?? position
        if rest < bytes.count {
            partial = Array(bytes[rest...])
            partialAfterCut = cut
        }
    }

    /// The last line, without a newline at its end.
    public mutating func finish() {
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

/// Byte searches at the speed of C (`memchr`, `memrchr`, `memmem`), as offsets into an array.
public enum SearchBytes {
    public static func index(of byte: UInt8, in bytes: [UInt8], from: Int) -> Int? {
        guard from < bytes.count else { return nil }
        return bytes.withUnsafeBytes { buffer in
            memchr(buffer.baseAddress! + from, Int32(byte), buffer.count - from).map { UnsafeRawPointer($0) - buffer.baseAddress! }
        }
    }

    /// The last `byte` in `from..<before` (a line's start, looked for back from a match: a short way).
    public static func lastIndex(of byte: UInt8, in bytes: [UInt8], from: Int, before: Int) -> Int? {
        var at = before - 1
        while at >= from {
            if bytes[at] == byte { return at }
            at -= 1
        }
        return nil
    }

    /// How many times `byte` is in `range`.
    public static func count(_ byte: UInt8, in bytes: [UInt8], _ range: Range<Int>) -> Int {
        var count = 0, at = range.lowerBound
        while at < range.upperBound, let found = index(of: byte, in: bytes, from: at), found < range.upperBound {
            count += 1
            at = found + 1
        }
        return count
    }

    private typealias MemMem = @convention(c) (UnsafeRawPointer?, Int, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?
    /// glibc's `memmem`, which Glibc's module shows only under `_GNU_SOURCE`: found by name (RTLD_DEFAULT).
    private static let memmemFunction: MemMem? = dlsym(nil, "memmem").map { unsafeBitCast($0, to: MemMem.self) }

    /// Whether `needle` is anywhere in `bytes`: `memmem`, no per-byte work in Swift whatever the
    /// needle's first byte (`find`'s `memchr` stops at every `c` of hex-heavy output).
    public static func contains(_ needle: [UInt8], in bytes: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= bytes.count else { return false }
        guard let memmem = memmemFunction else { return find(needle, in: bytes, from: 0) != nil }
        return bytes.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { memmem(haystack.baseAddress!, haystack.count, $0.baseAddress!, $0.count) != nil }
        }
    }

    /// Where `needle` first is at or after `from`: its first byte by `memchr`, the rest by `memcmp`.
    public static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty else { return nil }
        var at = from
        while at + needle.count <= bytes.count, let first = index(of: needle[0], in: bytes, from: at) {
            guard first + needle.count <= bytes.count else { return nil }
            let same = bytes.withUnsafeBytes { buffer in
                needle.withUnsafeBytes { memcmp(buffer.baseAddress! + first, $0.baseAddress!, needle.count) == 0 }
            }
            if same { return first }
            at = first + 1
        }
        return nil
    }
}
