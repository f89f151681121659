import Foundation
import Testing

/// `JSONWriter.key(_: StaticString)` and the `field(_: StaticString, …)` members copy a literal key
/// as it is, checked only by a debug `assert` (issue 39): a release build would write a key with a
/// quote, a backslash, a control or a non-ASCII character into the JSON unescaped. This scans the
/// sources for every literal given to one of them and refuses such a key.
@Suite("JSONWriter: literal keys need no escape")
struct JSONWriterKeyLiteralTests {
    /// The functions that take a JSON key as a `StaticString` and copy it unescaped.
    static let keyEntryPoints: Set<String> = ["key", "field", "duration"]
    /// Every other function in Sources that takes a `StaticString`: none writes a JSON key. A new
    /// one fails `entryPoints` until it is put in one list or the other.
    static let otherStaticStringFunctions: Set<String> = ["literal", "assertNoLockHeld", "assertOnLoop", "access", "cached"]

    static let sources = LayoutTests.sources

    static func swiftFiles() throws -> [(path: String, text: String)] {
        guard let walker = FileManager.default.enumerator(atPath: sources.path) else { throw CocoaError(.fileNoSuchFile) }
        var files: [(String, String)] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            files.append((path, try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)))
        }
        return files
    }

    /// A literal given to one of `names` in Swift source: its text between the quotes as written, and whether it is plain
    /// (one line, not raw, no interpolation: a `StaticString`).
    struct Literal: Equatable {
        var function: String
        var text: String
        var plain: Bool
    }

    static func isIdentifier(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
    }

    /// Each `name("…"` (or `name(#"…`, `name("""`) in `source` for a name in `names`.
    static func literals(in source: String, names: Set<String>) -> [Literal] {
        let bytes = Array(source.utf8)
        var found: [Literal] = []
        var index = 0
        while index < bytes.count {
            guard isIdentifier(bytes[index]), index == 0 || !isIdentifier(bytes[index - 1]) else { index += 1; continue }
            var end = index
            while end < bytes.count, isIdentifier(bytes[end]) { end += 1 }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            index = end
            guard names.contains(name), end + 1 < bytes.count, bytes[end] == UInt8(ascii: "(") else { continue }
            let open = end + 1
            if bytes[open] == UInt8(ascii: "#") || bytes[open...].starts(with: Array("\"\"\"".utf8)) {
                found.append(Literal(function: name, text: String(decoding: bytes[open..<min(open + 20, bytes.count)], as: UTF8.self), plain: false))
                continue
            }
            guard bytes[open] == UInt8(ascii: "\"") else { continue }
            var close = open + 1
            while close < bytes.count, bytes[close] != UInt8(ascii: "\""), bytes[close] != UInt8(ascii: "\n") {
                close += bytes[close] == UInt8(ascii: "\\") ? 2 : 1
            }
            let text = String(decoding: bytes[open + 1..<min(close, bytes.count)], as: UTF8.self)
            // An interpolated literal is a `String`: the escaping overload takes it.
            if text.contains("\\(") { continue }
            found.append(Literal(function: name, text: text, plain: close < bytes.count && bytes[close] == UInt8(ascii: "\"")))
            index = close
        }
        return found
    }

    /// Why a key literal may not be copied unescaped; nil when it may.
    static func refusal(_ literal: Literal) -> String? {
        if !literal.plain { return "not a one-line plain literal" }
        for byte in literal.text.utf8 {
            if byte == UInt8(ascii: "\\") { return "an escape (a backslash)" }
            if byte == UInt8(ascii: "\"") { return "a quote" }
            if byte < 0x20 || byte == 0x7F { return "a control character" }
            if byte >= 0x80 { return "a non-ASCII character" }
        }
        return nil
    }

    static func refused(in source: String) -> [String] {
        literals(in: source, names: keyEntryPoints).compactMap { literal in refusal(literal).map { "\(literal.function)(\"\(literal.text)\"): \($0)" } }
    }

    @Test("every literal key in Sources is plain ASCII without quote, backslash or control character")
    func sourcesClean() throws {
        var keys = 0
        for (path, text) in try Self.swiftFiles() {
            keys += Self.literals(in: text, names: Self.keyEntryPoints).count
            for refused in Self.refused(in: text) { Issue.record("Sources/\(path): \(refused)") }
        }
        #expect(keys > 100, "the scan finds the literal keys (\(keys))")
    }

    @Test("the scan refuses a planted key with a quote, a backslash, a control or a non-ASCII character, and passes a plain one",
          arguments: [
              (#"w.key("run\"id")"#, "an escape (a backslash)"), (#"w.field("a\\b", 1)"#, "an escape (a backslash)"),
              ("w.key(\"tab\there\")", "a control character"), (#"w.key("caf\u{E9}")"#, "an escape (a backslash)"),
              ("w.field(\"café\", x)", "a non-ASCII character"), ("w.key(#\"raw\"#)", "not a one-line plain literal"),
              ("key(\"\"\"\nmulti\n\"\"\")", "not a one-line plain literal"),
          ])
    func plantedRefused(source: String, reason: String) {
        let refused = Self.refused(in: "struct X { func f() { \(source) } }")
        #expect(refused.count == 1 && refused.first?.hasSuffix(": \(reason)") == true, "\(refused)")
    }

    @Test("plain keys, interpolated ones (escaped by the String overload) and other functions pass")
    func plainPasses() {
        let source = #"w.key("runID"); w.field("exit_code", 3); w.key("\(name)"); monkey("a\"b"); w.keyed("é")"#
        #expect(Self.refused(in: source).isEmpty)
        #expect(Self.literals(in: source, names: Self.keyEntryPoints).map(\.text) == ["runID", "exit_code"])
    }

    @Test("the StaticString entry points are known: key and field write JSON keys; the others do not")
    func entryPoints() throws {
        var names: Set<String> = []
        for (_, text) in try Self.swiftFiles() {
            for line in text.split(separator: "\n") where line.contains("func ") && line.contains(": StaticString") {
                guard let range = line.range(of: "func ") else { continue }
                names.insert(String(line[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
            }
        }
        #expect(names.subtracting(Self.otherStaticStringFunctions) == Self.keyEntryPoints,
                "a function taking a StaticString: if it writes a JSON key unescaped, add it to keyEntryPoints, else to otherStaticStringFunctions")
    }
}
