import BatonCore
import Foundation
import Testing

/// `FastRequest` against the reference path it stands in for (`JSONDecoder` and the duplicate-key
/// scan): where it answers, the reference accepts the line and reads the same request; and it
/// does answer for the lines clients send, so that the fast path is really taken.
@Suite("The fast request reader")
struct FastRequestTests {
    /// The reference: the decoded request, or nil when the line is refused (undecodable or a key twice).
    static func reference(_ line: [UInt8]) -> Request? {
        guard let request = try? JSONDecoder().decode(Request.self, from: Data(line)), DuplicateKeys.find(in: line).isEmpty
        else { return nil }
        return request
    }

    /// The property every line must keep: an answer is the reference's answer.
    static func check(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let fast = FastRequest.read(line) else { return }
        let expected = reference(line)
        #expect(expected == fast, "\(String(decoding: line, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    static let answered: [String] = [
        #"{"op":"ping"}"#,
        #"{"id":1,"op":"ping"}"#,
        #" { "id" : "abc" , "op" : "status" } "#,
        "{\t\"op\":\r\n\"status\"}\n",
        #"{"id":-9223372036854775808,"op":"show","run":9223372036854775807}"#,
        #"{"id":null,"op":"trigger","action":"deploy","params":{"env":"prod","note":"a \"b\" \\ \/ \b\f\n\r\t"},"policy":"queue","detach":true}"#,
        #"{"op":"trigger","action":"d\u00e9ploy","params":{"k\u0065y":"\ud83d\ude00 日本 é"},"force":false,"slot":1700000000000000}"#,
        #"{"op":"output","run":7,"from":0,"follow":true}"#,
        #"{"op":"watch","progress":true,"action":null}"#,
        #"{"op":"cancel","action":"a","key":"a env=prod"}"#,
        #"{"op":"prune","dryRun":true}"#,
        #"{"op":"trigger","action":"a","params":{}}"#,
        #"{"\u006fp":"ping"}"#,
        #"{"op":"trigger","action":"\u0000"}"#,
    ]

    static let refused: [String] = [
        "", "null", "[]", "{}", #"{"op":"nope"}"#, #"{"op":"ping""#, #"{"op":"ping",}"#, #"{"op":"ping"} x"#, #"{"op":"ping"}{}"#,
        #"{"op":"ping","op":"status"}"#, #"{"op":"ping","\u006fp":"status"}"#, #"{"op":"trigger","params":{"a":"1","a":"2"}}"#,
        #"{"op":"trigger","params":{"é":"1","e\u0301":"2"}}"#, #"{"op":"show","run":1.0}"#, #"{"op":"show","run":1e2}"#,
        #"{"op":"show","run":-0}"#, #"{"op":"show","run":01}"#, #"{"op":"show","run":9223372036854775808}"#,
        #"{"op":"show","run":-9223372036854775809}"#, #"{"op":"show","run":"7"}"#, #"{"op":"show","run":-}"#,
        #"{"id":1.5,"op":"ping"}"#, #"{"id":true,"op":"ping"}"#, #"{"op":"history","filter":{"limit":1}}"#,
        #"{"op":"ping","extra":1}"#, #"{"op":"trigger","params":{"a":1}}"#, #"{"op":"trigger","params":null,"detach":"yes"}"#,
        #"{"op":"trigger","action":"\ud800"}"#, #"{"op":"trigger","action":"\udc00"}"#, #"{"op":"trigger","action":"\ud800\u0041"}"#,
        #"{"op":"trigger","action":"\x"}"#, #"{"op":"trigger","action":"\u12"}"#, "{\"op\":\"trigger\",\"action\":\"a\u{1}b\"}",
        #"{"op":"ping","detach":tru}"#, #"{"op":"ping","detach":nul}"#, #"{"op":"trigger","policy":"Queue"}"#,
        #"{op:"ping"}"#, #"{'op':'ping'}"#, #"{"op":"ping"} // comment"#,
    ]

    @Test("the lines clients send are read, and read as the reference reads them", arguments: answered)
    func answers(line: String) {
        let bytes = Array(line.utf8)
        #expect(FastRequest.read(bytes) != nil, "\(line)")
        #expect(FastRequest.read(bytes) == Self.reference(bytes), "\(line)")
    }

    @Test("what it is not sure of, or the reference refuses, is left to the reference", arguments: refused)
    func leaves(line: String) {
        #expect(FastRequest.read(Array(line.utf8)) == nil, "\(line)")
    }

    @Test("invalid UTF-8 in a string is left to the reference")
    func invalidUTF8() {
        for bad: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
            #expect(FastRequest.read(Array(#"{"op":"trigger","action":""#.utf8) + bad + Array(#""}"#.utf8)) == nil)
        }
    }

    @Test("random requests as the client encodes them are all read, each to itself")
    func randomRequests() throws {
        var random = SplitMix(seed: 2026_12_01)
        let encoder = JSONEncoder()
        for _ in 0..<2_000 {
            let request = Self.randomRequest(&random)
            let line = try Array(encoder.encode(request))
            #expect(FastRequest.read(line) == request, "\(String(decoding: line, as: UTF8.self))")
        }
    }

    @Test("mutated lines: wherever the fast reader answers, the reference gives the same request")
    func mutations() throws {
        var random = SplitMix(seed: 7)
        let encoder = JSONEncoder()
        let seeds = try (0..<200).map { _ in try Array(encoder.encode(Self.randomRequest(&random))) } + Self.answered.map { Array($0.utf8) }
        var answeredCount = 0
        for _ in 0..<20_000 {
            let line = Self.mutate(seeds[Int(random.next() % UInt64(seeds.count))], &random)
            if FastRequest.read(line) != nil { answeredCount += 1 }
            Self.check(line)
        }
        // Some mutations keep a line valid (a digit or a letter of a value changed): the check ran on answers too.
        #expect(answeredCount > 100)
    }

    static let alphabet: [UInt8] = Array(#"{}[]:,"\ u0123456789abcdefnrtul-.eE+ é"#.utf8) + [0x00, 0x01, 0x0A, 0xFF, 0xC3]

    static func mutate(_ line: [UInt8], _ random: inout SplitMix) -> [UInt8] {
        var line = line
        for _ in 0...Int(random.next() % 3) {
            let at = Int(random.next() % UInt64(line.count + 1))
            let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
            switch random.next() % 3 {
            case 0: line.insert(byte, at: at)
            case 1 where at < line.count: line.remove(at: at)
            default: if at < line.count { line[at] = byte }
            }
        }
        return line
    }

    static func randomRequest(_ random: inout SplitMix) -> Request {
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { random.next() % 2 == 0 ? value() : nil }
        let texts = ["", "deploy", "a b", "é", "日本", "\"q\"", "back\\slash", "tab\there", "\u{1}", "😀", "/path/x"]
        func text() -> String { texts[Int(random.next() % UInt64(texts.count))] }
        func number() -> Int64 { [0, 1, -1, 42, Int64.max, Int64.min, 1_700_000_000_000_000][Int(random.next() % 7)] }
        var request = Request(op: Operation.allCases[Int(random.next() % UInt64(Operation.allCases.count))])
        request.id = maybe(random.next() % 2 == 0 ? RequestID.number(number()) : .text(text()))
        request.action = maybe(text())
        request.params = maybe(Dictionary((0..<Int(random.next() % 4)).map { _ in (text(), text()) }, uniquingKeysWith: { a, _ in a }))
        request.policy = maybe(Policy.allCases[Int(random.next() % UInt64(Policy.allCases.count))])
        request.detach = maybe(random.next() % 2 == 0)
        request.force = maybe(random.next() % 2 == 0)
        request.dryRun = maybe(random.next() % 2 == 0)
        request.progress = maybe(random.next() % 2 == 0)
        request.follow = maybe(random.next() % 2 == 0)
        request.run = maybe(number())
        request.from = maybe(number())
        request.slot = maybe(number())
        request.key = maybe(text())
        request.actingAs = maybe(text())
        request.asGroup = maybe(text())
        return request
    }
}
