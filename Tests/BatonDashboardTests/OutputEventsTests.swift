import BatonCore
import BatonDashboard
import Foundation
import Testing

/// A run's output on the page's event stream, as text: ids that are byte positions, bytes in base64.
@Suite("Dashboard output events")
struct OutputEventsTests {
    @Test("Last-Event-ID is a position: none is 0, digits are themselves, anything else is refused", arguments: [
        (nil, Int64?.some(0)), ("0", 0), ("81920", 81_920), ("999999999999999999", 999_999_999_999_999_999),
        ("", nil), ("-1", nil), ("1e3", nil), (" 5", nil), ("abc-3", nil), ("1234567890123456789", nil), ("٣", nil),
    ] as [(String?, Int64?)])
    func resume(lastEventID: String?, expected: Int64?) {
        #expect(OutputEvents.resumePosition(lastEventID) == expected)
    }

    @Test("a chunk's event: its end as the id, its start and stream, any bytes exactly in base64")
    func chunk() throws {
        let bytes: [UInt8] = [0, 0xff, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x0a, 0x0a, 0x3c]
        let text = OutputEvents.chunk(OutputChunk(start: 100, stream: .stderr, at: Timestamp(rawValue: 5), bytes: bytes))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 5 && lines[0] == "id: 110" && lines[1] == "event: output" && lines[3] == "" && lines[4] == "")
        let data = try #require(lines[2].hasPrefix("data: ") ? Data(lines[2].dropFirst(6).utf8) : nil)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["start"] as? Int == 100 && object["stream"] as? String == "stderr")
        #expect((object["data"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init) == bytes)
    }

    @Test("the end says the phase, where the output ends and what the history dropped; refusals carry batond's message")
    func end() {
        #expect(OutputEvents.end(phase: .failure, position: 42, dropped: 7) == "event: end\ndata: {\"phase\":\"failure\",\"outputEnd\":42,\"outputDropped\":7}\n\n")
        #expect(OutputEvents.refused("no run 9") == "event: refused\ndata: {\"message\":\"no run 9\"}\n\n")
        #expect(OutputEvents.offline("gone\nnow") == "event: offline\ndata: {\"message\":\"gone\\nnow\"}\n\n")
    }
}
