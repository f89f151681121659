import BatonCore
import Testing

/// A run's output cut into lines for the journal: `OutputLines`, as a table.
@Suite("Output lines")
struct OutputLinesTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("bytes in, whole lines out, without their newline; what has no newline waits", arguments: [
        (["a\nb\n"], ["a", "b"], ""),
        (["a", "b\n"], ["ab"], ""),
        (["a\n\nb"], ["a", ""], "b"),
        (["\n"], [""], ""),
        (["abc"], [], "abc"),
        (["ab", "c", "\nd", "e\nf"], ["abc", "de"], "f"),
        (["x\r\ny\r"], ["x\r"], "y\r"),
    ] as [([String], [String], String)])
    func lines(_ pieces: [String], _ expected: [String], _ left: String) {
        var lines = OutputLines()
        var out: [[UInt8]] = []
        for piece in pieces { out += lines.append(Self.bytes(piece), from: .stdout) }
        #expect(out == expected.map(Self.bytes))
        #expect(lines.waiting == left.utf8.count)
        let rest = lines.finish()
        #expect(rest.map(\.line) == (left.isEmpty ? [] : [Self.bytes(left)]))
        #expect(lines.finish().isEmpty && lines.waiting == 0)
    }

    @Test("stdout and stderr are cut apart: a line of one is never glued to the other's")
    func streams() {
        var lines = OutputLines()
        #expect(lines.append(Self.bytes("out-"), from: .stdout).isEmpty)
        #expect(lines.append(Self.bytes("err\nerr-"), from: .stderr) == [Self.bytes("err")])
        #expect(lines.append(Self.bytes("line\n"), from: .stdout) == [Self.bytes("out-line")])
        let rest = lines.finish()
        #expect(rest.count == 1 && rest[0].stream == .stderr && rest[0].line == Self.bytes("err-"))
    }

    @Test("a line longer than maxLine is cut at maxLine; the cut never waits past it")
    func long() {
        var lines = OutputLines(maxLine: 4)
        #expect(lines.append(Self.bytes("abcdefghij\nk"), from: .stdout) == ["abcd", "efgh", "ij"].map(Self.bytes))
        #expect(lines.waiting == 1)
        #expect(lines.append(Self.bytes("lmn"), from: .stdout) == [Self.bytes("klmn")])
        #expect(lines.waiting == 0)
        // Exactly maxLine then a newline: the cut line, then an empty one.
        #expect(lines.append(Self.bytes("wxyz\n"), from: .stdout) == [Self.bytes("wxyz"), []])
    }

    @Test("any bytes go through as they are: NUL, invalid UTF-8, escapes")
    func binary() {
        var lines = OutputLines()
        let line: [UInt8] = [0, 0xFF, 0xFE, 0x1B, 0x5B, 0x33, 0x31, 0x6D, 0xC3]
        #expect(lines.append(line + [10], from: .stderr) == [line])
    }
}
