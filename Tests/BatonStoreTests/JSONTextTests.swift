import BatonCore
@testable import BatonStore
import Foundation
import Testing

@Suite("Hand-written JSON of the text columns")
struct JSONTextTests {
    static let details: [TransitionDetail] = [
        TransitionDetail(),
        TransitionDetail(attempt: 2),
        TransitionDetail(reason: "cancelled", by: 1000),
        TransitionDetail(reason: "exit", exitCode: 0, leftovers: 2,
                         usage: ResourceUsage(cpuUser: .milliseconds(512), cpuSystem: .microseconds(20), memoryPeak: 210_000_000)),
        TransitionDetail(reason: "exit", exitCode: 3, error: "exited with status 3: \"disk\" full\n\tat /var\\lib \u{1}\u{1F} é 日本"),
        TransitionDetail(reason: "replace", replaces: [4, 5]),
        TransitionDetail(signal: 9, backoff: 1_500_000, pgid: 4242),
        TransitionDetail(replacedBy: 9),
        { var detail = TransitionDetail(); detail.via = "webhook gh from 203.0.113.7, delivery 72d3"; return detail }(),
        { var detail = TransitionDetail(reason: "follow-up of run 3"); detail.debounce = 1_764_558_000_000_000; return detail }(),
    ]

    @Test("a detail is the text JSONEncoder with sorted keys gives, and decodes back to itself", arguments: details)
    func detail(_ detail: TransitionDetail) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = JSONText.detail(detail)
        let reference = try JSONSerialization.jsonObject(with: encoder.encode(detail)) as? NSDictionary
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary == reference)
        #expect(JSONText.detail(text) == detail)
    }

    @Test("params are a sorted object of strings, escaped, and decode back")
    func params() {
        let params = ["b": "x\"y", "a": "1\n2", "c": "日本"]
        let text = JSONText.object(params)
        #expect(text == #"{"a":"1\n2","b":"x\"y","c":"日本"}"#)
        #expect(JSONText.params(text) == params)
        #expect(JSONText.object([:]) == "{}")
    }
}
