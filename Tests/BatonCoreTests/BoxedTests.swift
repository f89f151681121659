import BatonCore
import Foundation
import Testing

/// `@Boxed` keeps a field behind a reference; on the wire and to its users it must be the plain
/// optional it replaced.
@Suite("Boxed fields")
struct BoxedTests {
    struct Plain: Codable, Equatable {
        var name: String
        var detail: RunDetail?
        var error: WireError?
    }

    struct Holder: Codable, Equatable {
        var name: String
        @Boxed var detail: RunDetail? = nil
        @Boxed var error: WireError? = nil
    }

    static let detail = RunDetail(run: WireJSONTests.run, transitions: [], triggers: [], output: Data("tail".utf8), outputTruncated: true)

    @Test("encodes as the plain optional: nil left out, a value written whole")
    func encodes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for (detail, error) in [(nil, nil), (Self.detail, nil), (nil, WireError(code: .busy, message: "m", run: 3)),
                                (Self.detail, WireError(code: .forbidden, message: "no"))] as [(RunDetail?, WireError?)] {
            let boxed = Holder(name: "n", detail: detail, error: error)
            let plain = Plain(name: "n", detail: detail, error: error)
            #expect(try encoder.encode(boxed) == encoder.encode(plain))
        }
        #expect(String(decoding: try encoder.encode(Holder(name: "n")), as: UTF8.self) == #"{"name":"n"}"#)
    }

    @Test("decodes as the plain optional: absent and null read as nil, a value whole, a wrong value refused")
    func decodes() throws {
        let decoder = JSONDecoder()
        #expect(try decoder.decode(Holder.self, from: Data(#"{"name":"n"}"#.utf8)) == Holder(name: "n"))
        #expect(try decoder.decode(Holder.self, from: Data(#"{"name":"n","error":null}"#.utf8)) == Holder(name: "n"))
        let full = try JSONEncoder().encode(Plain(name: "n", detail: Self.detail, error: WireError(code: .busy, message: "m")))
        let decoded = try decoder.decode(Holder.self, from: full)
        #expect(decoded.detail == Self.detail)
        #expect(decoded.error == WireError(code: .busy, message: "m"))
        #expect(throws: DecodingError.self) { try decoder.decode(Holder.self, from: Data(#"{"name":"n","error":7}"#.utf8)) }
    }

    @Test("a copy keeps its value when the original is set again, and setting nil clears only one")
    func copies() {
        var original = Holder(name: "a", detail: Self.detail)
        let copy = original
        original.detail?.outputTruncated = false
        #expect(original.detail?.outputTruncated == false)
        #expect(copy.detail?.outputTruncated == true)
        original.detail = nil
        #expect(original.detail == nil)
        #expect(copy.detail == Self.detail)
    }
}
