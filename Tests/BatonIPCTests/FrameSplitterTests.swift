import BatonCore
import BatonIPC
import Testing

@Suite("Frames")
struct FrameSplitterTests {
    func feed(_ splitter: inout FrameSplitter, _ text: String) -> [FrameSplitter.Frame] {
        Array(text.utf8).withUnsafeBytes { splitter.feed($0) }
    }

    @Test("lines split on newlines, across reads, and blank lines are skipped")
    func lines() {
        var splitter = FrameSplitter(limit: 100)
        #expect(feed(&splitter, "{\"a\":1}\n{\"b\"") == [.line(Array("{\"a\":1}".utf8))])
        #expect(feed(&splitter, ":2}\r\n\n") == [.line(Array("{\"b\":2}".utf8))])
        #expect(splitter.buffered == 0)
    }

    @Test("an oversized line is reported once and skipped; the next line is read")
    func oversized() {
        var splitter = FrameSplitter(limit: 8)
        #expect(feed(&splitter, "0123456789") == [.oversized])
        #expect(feed(&splitter, "abcdef") == [])
        #expect(feed(&splitter, "gh\nok\n") == [.line(Array("ok".utf8))])
        #expect(feed(&splitter, "123456789\nfine\n") == [.oversized, .line(Array("fine".utf8))])
    }
}
