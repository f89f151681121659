import BatonCore
import Foundation
import Testing

/// Issue 21, item 4: every list, map and name a request can carry has a cap, checked from the
/// request alone; lists in a filter are sets.
@Suite("Request bounds")
struct RequestBoundsTests {
    /// A request line and what `validated()` says of it: the `bad_request` message, or nil when it passes.
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let line: String
        let refusal: String?
        var testDescription: String { name }
    }

    static func list(_ items: some Sequence<String>) -> String { "[" + items.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
    static func object(_ count: Int, value: String = "v") -> String {
        "{" + (0..<count).map { "\"k\($0)\":\"\(value)\"" }.joined(separator: ",") + "}"
    }
    static let names = (0..<1_001).map { "a\($0)" }
    static func text(_ count: Int) -> String { String(repeating: "x", count: count) }

    static let rows: [Row] = [
        // One row per cap, just past it.
        Row(name: "limit", line: #"{"op":"history","filter":{"limit":100001}}"#, refusal: "filter.limit must be from 0 to 100000, got 100001"),
        Row(name: "window", line: #"{"op":"history","filter":{"since":2,"until":1}}"#,
            refusal: "filter.until is before filter.since: the window is empty"),
        Row(name: "filter.actions", line: #"{"op":"history","filter":{"actions":\#(list(names))}}"#,
            refusal: "filter.actions lists 1001 actions; at most 1000 (duplicates count once)"),
        Row(name: "filter.actions, a long name", line: #"{"op":"stats","filter":{"actions":["a","\#(text(65))"]}}"#,
            refusal: "filter.actions has a name of 65 bytes; at most 64"),
        Row(name: "filter.params", line: #"{"op":"history","filter":{"params":\#(object(101))}}"#,
            refusal: "filter.params has 101 entries; at most 100"),
        Row(name: "filter.params, not a name", line: #"{"op":"history","filter":{"params":{"a\"b":"v"}}}"#,
            refusal: #"filter.params: "a\"b" is not a param name (letters, digits and '_', starting with a letter or '_', at most 64)"#),
        Row(name: "filter.params, a long name", line: #"{"op":"history","filter":{"params":{"\#(text(65))":"v"}}}"#,
            refusal: "is not a param name"),
        Row(name: "filter.params, a long value", line: #"{"op":"history","filter":{"params":{"k":"\#(text(4_097))"}}}"#,
            refusal: "filter.params.k: the value is 4097 bytes; at most 4096"),
        Row(name: "action", line: #"{"op":"watch","action":"\#(text(65))"}"#, refusal: "action is 65 bytes; at most 64"),
        Row(name: "params", line: #"{"op":"trigger","action":"a","params":\#(object(101))}"#, refusal: "params has 101 entries; at most 100"),
        Row(name: "params, a long name", line: #"{"op":"trigger","action":"a","params":{"\#(text(65))":"v"}}"#,
            refusal: "params has a name of 65 bytes; at most 64"),
        Row(name: "params, a long value", line: #"{"op":"trigger","action":"a","params":{"k":"\#(text(4_097))"}}"#,
            refusal: "params.k: the value is 4097 bytes; at most 4096"),
        Row(name: "id", line: #"{"op":"watch","id":"\#(text(257))"}"#, refusal: "id is 257 bytes; at most 256"),
        // Whatever the op: a field it does not read is bounded all the same.
        Row(name: "a filter on ping", line: #"{"op":"ping","filter":{"actions":\#(list(names))}}"#, refusal: "filter.actions lists 1001"),
        // At each cap: accepted.
        Row(name: "1,000 actions, each listed 3 times",
            line: #"{"op":"history","filter":{"actions":\#(list(names.prefix(1_000) + names.prefix(1_000) + names.prefix(1_000)))}}"#, refusal: nil),
        Row(name: "100 params of the longest value", line: #"{"op":"trigger","action":"a","params":\#(object(100, value: text(4_096)))}"#, refusal: nil),
        Row(name: "the longest names and id",
            line: #"{"op":"history","id":"\#(text(256))","action":"\#(text(64))","filter":{"actions":["\#(text(64))"],"params":{"\#(text(64))":"v"}}}"#,
            refusal: nil),
        Row(name: "a number id and an empty filter", line: #"{"op":"stats","id":12345678901,"filter":{}}"#, refusal: nil),
    ]

    static func validate(_ line: String) throws -> Result<Request, BatonError> {
        let request = try JSONDecoder().decode(Request.self, from: Data(line.utf8))
        do throws(BatonError) { return .success(try request.validated()) } catch { return .failure(error) }
    }

    @Test("each cap refuses one past it, naming the field and the cap, and admits the cap itself", arguments: rows)
    func caps(_ row: Row) throws {
        switch try Self.validate(row.line) {
        case .success:
            #expect(row.refusal == nil, "passed; expected \(row.refusal ?? "")")
        case let .failure(error):
            #expect(error.code == .badRequest)
            #expect(row.refusal.map { error.message.contains($0) } == true, "\(error.message)")
        }
    }

    @Test("lists in a filter are sets: each name and phase once, where it first appears")
    func sets() throws {
        let copies = Array(repeating: "p", count: 20_000)
        let line = #"{"op":"stats","filter":{"actions":\#(Self.list(["b"] + copies + ["a", "b"])),"phases":["success","failure","success"]}}"#
        let request = try Self.validate(line).get()
        #expect(request.filter?.actions == ["b", "p", "a"])
        #expect(request.filter?.phases == [.success, .failure])
        #expect(try request.validated().filter == request.filter, "validating again changes nothing")
    }
}
