@testable import baton
import Testing

/// `Format.table` and `trimmingTrailingSpaces` work on bytes; these check them against the
/// character-by-character way they were written before, over cells chosen to trip a byte walk.
@Suite("Format.table: bytes give what characters gave")
struct FormatTableTests {
    /// The character-based table, as it was: the oracle.
    static func characterTable(_ header: [String], _ rows: [[String]], width: Int) -> String {
        guard !header.isEmpty else { return "" }
        let all = [header] + rows
        var widths = header.indices.map { column in all.map { Format.visibleCount($0[column]) }.max() ?? 0 }
        let fixed = widths.dropLast().reduce(0, +) + 2 * (widths.count - 1)
        widths[widths.count - 1] = max(min(widths.last!, width - fixed), 8)
        return all.map { row in
            var line = row.enumerated().map { column, cell in Format.fit(cell, widths[column]) }.joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            return line
        }.joined(separator: "\n") + "\n"
    }

    static let cells = [
        "", " ", "deploy", "trailing   ", "  leading", "é", "e\u{301}", "a \u{301}", "a \u{301}  ", "日本語", "👩‍👩‍👧",
        "\u{1B}[32msuccess\u{1B}[0m", "\u{1B}[31m", "tab\there", "cr\r\nlf", "a-rather-long-cell-that-the-last-column-cuts-with-an-ellipsis",
    ]

    @Test("every cell in every column, with widths that cut and widths that do not")
    func matchesCharacters() {
        var generator = SystemRandomNumberGenerator()
        for width in [20, 40, 100] {
            for _ in 0..<300 {
                let columns = Int.random(in: 1...4, using: &generator)
                let header = (0..<columns).map { "H\($0)" }
                let rows = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    (0..<columns).map { _ in Self.cells.randomElement(using: &generator)! }
                }
                let table = Format.table(header, rows, width: width)
                let expected = Self.characterTable(header, rows, width: width)
                #expect(table == expected, "\(header) \(rows) at width \(width)")
                #expect(Array(table.utf8) == Array(expected.utf8))
            }
        }
    }

    @Test("trailing spaces go, a space that a combining mark follows stays", arguments: [
        ("", ""), ("   ", ""), ("a", "a"), ("a  ", "a"), ("a \u{301}", "a \u{301}"), ("a \u{301}  ", "a \u{301}"), ("é  ", "é"), (" x ", " x"),
    ])
    func trimming(text: String, expected: String) {
        #expect(text.trimmingTrailingSpaces() == expected)
        #expect(Array(text.trimmingTrailingSpaces().utf8) == Array(expected.utf8))
    }
}
