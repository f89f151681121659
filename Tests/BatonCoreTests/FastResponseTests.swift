import BatonCore
import Foundation
import Testing

/// `FastResponse` against `JSONDecoder`, the path it stands in for: where it answers, the decoder
/// reads the same response; and it does answer for the lines batond writes for the one-shot
/// questions, so that the fast path is really taken.
@Suite("The fast response reader")
struct FastResponseTests {
    /// A response as a canonical text (sorted keys), so that two decodings can be compared whole.
    static func canonical(_ response: Response) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(response), as: UTF8.self)
    }

    /// The property every line must keep: an answer is what `JSONDecoder` reads.
    static func check(_ line: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let fast = FastResponse.read(line) else { return }
        let reference = try? JSONDecoder().decode(Response.self, from: Data(line))
        #expect(reference != nil, "\(String(decoding: line, as: UTF8.self))", sourceLocation: sourceLocation)
        guard let reference else { return }
        #expect(try canonical(fast) == canonical(reference), "\(String(decoding: line, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    /// The fixtures of `WireJSONTests` (every field of a run and an action set), as batond writes them.
    static var lines: [[UInt8]] { WireJSONTests.responses.map { $0.jsonLine() } }

    @Test("batond's lines for runs, status, errors and ping are read, each as JSONDecoder reads it")
    func answers() throws {
        for (response, line) in zip(WireJSONTests.responses, Self.lines) where response.transition == nil {
            #expect(FastResponse.read(line) != nil, "\(String(decoding: line, as: UTF8.self))")
            try Self.check(line)
        }
        // And as JSONEncoder writes them (other key order, escaped slashes).
        for response in WireJSONTests.responses where response.transition == nil {
            let line = try Array(JSONEncoder().encode(response))
            #expect(FastResponse.read(line) != nil, "\(String(decoding: line, as: UTF8.self))")
            try Self.check(line)
        }
    }

    static let left: [String] = [
        "", "null", "[]", #"{"ok":true} x"#, #"{"ok":true,"ok":false}"#, #"{"ok":true,"newerField":1}"#,
        #"{"ok":false,"error":{"code":"teapot","message":"a newer code reads as internal"}}"#,
        #"{"ok":false,"error":{"message":"no code"}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"dancing","policy":"reject","params":{},"queuedAt":1,"attempts":0}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":1}}"#,
        #"{"ok":true,"run":{"id":1.0,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":1,"attempts":0}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{"x":"1","x":"2"},"queuedAt":1,"attempts":0}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":1,"attempts":0,"exitCode":4294967296}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":1,"attempts":0,"progress":{"fraction":1e999}}}"#,
        #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":1,"attempts":0,"progress":{"fraction":.5}}}"#,
        #"{"ok":true,"actions":[{"name":"a","exec":[],"policy":"reject","policies":[],"params":{}}]}"#,
        #"{"ok":true,"stats":[]}"#,
    ]

    @Test("what it is not sure of, or JSONDecoder refuses, is left to JSONDecoder", arguments: left)
    func leaves(line: String) {
        #expect(FastResponse.read(Array(line.utf8)) == nil, "\(line)")
    }

    @Test("values JSONDecoder reads as written: a lock's limit of 0, nulls, fractions, ids")
    func edges() throws {
        let lines = [
            #"{"ok":true,"actions":[{"name":"a","exec":["x"],"policy":"queue","policies":["queue"],"params":{"p":{"pattern":null}},"keyParams":[],"locks":[{"name":"db","limit":0}],"last":null}]}"#,
            #"{"id":"x","ok":null,"event":"update","run":{"id":1,"action":"a","key":"a","phase":"loading","policy":"reject","params":{},"queuedAt":1,"attempts":1,"progress":{"fraction":0.1}}}"#,
            #"{"id":-9223372036854775808,"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"loading","policy":"reject","params":{},"queuedAt":1,"attempts":1,"progress":{"fraction":1.7976931348623157e308,"completed":0}}}"#,
            #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"loading","policy":"reject","params":{},"queuedAt":1,"attempts":1,"progress":{"fraction":-0.0}}}"#,
            #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"loading","policy":"reject","params":{},"queuedAt":1,"attempts":1,"progress":{"fraction":4.9e-324}}}"#,
            #"{"ok":true,"run":{"id":1,"action":"a","key":"a","phase":"loading","policy":"reject","params":{},"queuedAt":1,"attempts":1,"progress":{"fraction":12345678.901234567890123}}}"#,
        ]
        for line in lines {
            #expect(FastResponse.read(Array(line.utf8)) != nil, "\(line)")
            try Self.check(Array(line.utf8))
        }
        #expect(FastResponse.read(Array(lines[0].utf8))?.actions?.first?.locks?.first?.limit == 0)
    }

    @Test("mutated lines: wherever the fast reader answers, JSONDecoder reads the same response")
    func mutations() throws {
        var random = SplitMix(seed: 2026_12_02)
        let seeds = Self.lines + Self.left.map { Array($0.utf8) }
        var answered = 0
        for _ in 0..<20_000 {
            let line = FastRequestTests.mutate(seeds[Int(random.next() % UInt64(seeds.count))], &random)
            if FastResponse.read(line) != nil { answered += 1 }
            try Self.check(line)
        }
        // Some mutations keep a line valid (a digit or a letter of a value changed): the check ran on answers too.
        #expect(answered > 100)
    }
}
