import BatonCore
@testable import BatonStore
@testable import BatonWire
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

/// `JSONText.params` and `JSONText.detail` read by hand and give the rest to `JSONDecoder`:
/// whatever the text, the answer is `JSONDecoder`'s (nothing where it throws).
@Suite("The params and detail columns read by hand")
struct JSONTextParamsTests {
    static func decoded(_ text: String) -> [String: String] {
        (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    static let texts = [
        #"{"k":"abc-123"}"#, #"{"a":"1","b":"2"}"#, #"{ "a" : "x\"y" , "b" : "\u00e9\ud83d\ude00" }"#, #"{"k":"日本"}"#,
        #"{"k":"a\/b\n\t\\\b\f\r"}"#, #"{"a":"\u0000"}"#, #"  {"a":"1"}  "#, #"{"":""}"#,
        // Not an object of strings, each key once: JSONDecoder's answer, as before.
        #"{"a":"1","a":"2"}"#, #"{"a":1}"#, #"{"a":null}"#, #"{"a":"1"} x"#, #"{"a":"1",}"#, #"{"a":"\ud800"}"#,
        "{\"a\":\"\u{1}\"}", "[]", "", "null", #"{"a":"1""#, #"{"a":"\x"}"#,
    ]

    @Test("the answer is JSONDecoder's", arguments: texts)
    func same(_ text: String) {
        #expect(JSONText.params(text) == Self.decoded(text))
    }

    static let details = [
        #"{"attempt":1,"cpuSystem":3,"cpuUser":12,"exitCode":0,"memoryPeak":100,"reason":"exit"}"#, #"{"locks":["a","b\""],"pgid":4242}"#,
        #"{"reason":"replace","replaces":[4,5]}"#, #"{"reason":null,"via":"x"}"#, #"{"replaces":[]}"#, #" { "debounce" : 17 } "#,
        #"{"error":"é\n\u0001"}"#, #"{"backoff":1500000,"signal":9}"#, #"{"replacedBy":9}"#, #"{"by":1000,"leftovers":2}"#,
        // Not what the hand reader takes: JSONDecoder's answer, as before.
        #"{"by":4294967296}"#, #"{"by":-1}"#, #"{"exitCode":2147483648}"#, #"{"attempt":1.0}"#, #"{"unknown":1}"#,
        #"{"reason":"a","reason":"b"}"#, #"{"locks":[1]}"#, "[]", #"{"reason":"exit""#,
    ]

    @Test("a detail's answer is JSONDecoder's", arguments: details)
    func detail(_ text: String) {
        let decoded = (try? JSONDecoder().decode(TransitionDetail.self, from: Data(text.utf8))) ?? TransitionDetail()
        #expect(JSONText.detail(text) == decoded)
    }

    /// The hand readers take what the columns hold (the fleet's cost per run depends on it: were
    /// they to give up on every text, the answers above would stay right through `JSONDecoder`),
    /// and leave the rest to it.
    @Test("the hand readers take the columns' texts and leave the others")
    func takenByHand() {
        for (index, text) in Self.texts.enumerated() {
            #expect((JSONText.paramsByHand(text) != nil) == (index < 8), "\(text)")
        }
        for (index, text) in Self.details.enumerated() {
            #expect((JSONText.detailByHand(text) != nil) == (index < 10), "\(text)")
        }
        for detail in JSONTextTests.details {
            #expect(JSONText.detailByHand(JSONText.detail(detail)) == detail)
        }
        #expect(JSONText.paramsByHand(JSONText.object(["k": "v", "a": "x\"y"])) == ["k": "v", "a": "x\"y"])
    }

    @Test("params written by JSONText.object and by JSONEncoder read back as they were")
    func written() throws {
        var generator = SplitMix(seed: 38)
        let characters = Array("aZ9 -_.é日😀\"\\/\n\t\u{7}\u{1F}")
        for _ in 0..<300 {
            let count = Int(generator.next() % 4)
            let params = Dictionary((0..<count).map { _ in
                (String((0..<Int(generator.next() % 5)).map { _ in characters[Int(generator.next() % UInt64(characters.count))] }),
                 String((0..<Int(generator.next() % 7)).map { _ in characters[Int(generator.next() % UInt64(characters.count))] }))
            }, uniquingKeysWith: { first, _ in first })
            #expect(JSONText.params(JSONText.object(params)) == params)
            let encoded = String(decoding: try JSONEncoder().encode(params), as: UTF8.self)
            #expect(JSONText.params(encoded) == params)
        }
    }
}
