@testable import batond
import Testing

/// The log's lines: one per message line, the rest indented, with journald's priority prefix when
/// stderr is the journal.
@Suite("The log's lines")
struct LogTextTests {
    @Test("a message as its lines, on a terminal and in the journal", arguments: [
        ("run 1 deploy: new → queued", false, "run 1 deploy: new → queued\n"),
        ("run 1 deploy: new → queued", true, "<6>run 1 deploy: new → queued\n"),
        ("first\nsecond\nthird", false, "first\n  second\n  third\n"),
        ("first\nsecond", true, "<6>first\n<6>  second\n"),
        ("ends with a newline\n", true, "<6>ends with a newline\n<6>  \n"),
        ("", false, "\n"),
        ("\n\n", false, "\n  \n  \n"),
    ])
    func lines(message: String, journal: Bool, expected: String) {
        #expect(String(decoding: Log.text(.info, message, journal: journal), as: UTF8.self) == expected)
    }

    @Test("the prefix is the level's priority")
    func priority() {
        #expect(Log.text(.error, "x", journal: true) == Array("<3>x\n".utf8))
        #expect(Log.text(.warning, "x\ny", journal: true) == Array("<4>x\n<4>  y\n".utf8))
    }
}
