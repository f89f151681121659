import BatonCore
import Foundation
import Testing

/// `Request.jsonLine()` (written by hand) against `JSONEncoder`: the same JSON value, read back
/// to the same request.
@Suite("Hand-written JSON of requests")
struct RequestJSONTests {
    /// A request with every optional field set but `filter` (`everyFieldSet` keeps it so when a field is added).
    static var complete: Request {
        Request(id: .text("a/\"b\"\n"), op: .trigger, action: "deploy é", params: ["env": "prod", "note": "\u{1}\t日本"], policy: .queue,
                detach: true, run: -9, key: "deploy env=prod", dryRun: false, progress: true, force: true, from: 1 << 40,
                follow: false, slot: 1_700_000_000_000_000, text: "connection \"refused\" é", reason: "migrating \"db\"", duration: 7_200_000_000,
                name: "dist/app \"1\".tar.gz", actingAs: "alice", hold: true, asGroup: "staff",
                after: WatchCursor(at: Timestamp(rawValue: 1_700_000_000_000_001), run: 12, seq: 3))
    }

    @Test("the fixture sets every optional field but filter, so that a field added without its hand-written JSON fails")
    func everyFieldSet() {
        for child in Mirror(reflecting: Self.complete).children where child.label != "filter" {
            let value = Mirror(reflecting: child.value)
            #expect(!(value.displayStyle == .optional && value.children.isEmpty), "Request.\(child.label ?? "?") is nil in the fixture")
        }
    }

    static func check(_ request: Request, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let line = try #require(request.jsonLine())
        let ours = try JSONSerialization.jsonObject(with: Data(line)) as? NSDictionary
        let reference = try JSONSerialization.jsonObject(with: JSONEncoder().encode(request)) as? NSDictionary
        #expect(ours != nil && ours == reference, "\(String(decoding: line, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode(Request.self, from: Data(line)) == request, sourceLocation: sourceLocation)
    }

    @Test("every field, a bare request, one with a history filter (JSONEncoder's path)")
    func fixtures() throws {
        try Self.check(Self.complete)
        try Self.check(Request(op: .ping))
        try Self.check(Request(id: .number(3), op: .history, filter: HistoryFilter(actions: ["deploy"], limit: 5)))
    }

    @Test("random requests: the same JSON as JSONEncoder's, read back to themselves")
    func random() throws {
        var random = SplitMix(seed: 2026_12_02)
        for _ in 0..<2_000 { try Self.check(FastRequestTests.randomRequest(&random)) }
    }
}
