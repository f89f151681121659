import BatonCore
import BatonIPC
@testable import BatonService
import Testing

/// What a request line becomes before anything is looked up for it: a request, or `bad_request`
/// with a message that names the field and says what was wrong with it.
@Suite("Request decoding")
struct RequestDecodingTests {
    static func refusal(_ line: String) -> BatonError? {
        guard case let .failure(refusal) = Service.request(in: .line(Array(line.utf8))) else { return nil }
        return refusal.error
    }

    @Test("each wrong field is named with what it should have been", arguments: [
        (#"{"op":"history","filter":{"limit":1e308}}"#, "filter.limit: 1e+308 is out of range: expected a whole number from 0 to 100000"),
        (#"{"op":"history","filter":{"limit":1e400}}"#, "filter.limit: a number too large to represent: expected a whole number from 0 to 100000"),
        (#"{"op":"history","filter":{"limit":1.5}}"#, "filter.limit: expected a whole number from 0 to 100000, got 1.5"),
        (#"{"op":"history","filter":{"limit":-1}}"#, "filter.limit must be from 0 to 100000, got -1"),
        (#"{"op":"history","filter":{"limit":"5"}}"#, "filter.limit: expected a whole number"),
        (#"{"op":"history","filter":{"since":0.5}}"#, "filter.since: expected a whole number (microseconds since 1970), got 0.5"),
        (#"{"op":"show","run":1.5}"#, "run: expected a whole number, got 1.5"),
        (#"{"op":"show","run":1e19}"#, "run: 1e+19 is out of range: expected a whole number"),
        (#"{"id":1.5,"op":"ping"}"#, "id: expected a string or an integer, got 1.5"),
        (#"{"id":1e300,"op":"ping"}"#, "id: expected a string or an integer, got 1e+300"),
        (#"{"id":true,"op":"ping"}"#, "id: expected a string or an integer, got true"),
        (#"{"id":{},"op":"ping"}"#, "id: expected a string or an integer, got an object"),
        (#"{"op":"dance"}"#, "op: "),
        // Numbers JSON does not allow, in a field batond ignores: Foundation's decoder took `2e-` there.
        (#"{"op":"history","limit":2e-}"#, "not a JSON object: 2e- is not a number"),
        (#"{"op":"history","x":[1.]}"#, "not a JSON object: 1. is not a number"),
        (#"{"op":"history","x":01}"#, "not a JSON object: 01 is not a number"),
        (#"{"op":"history","x":-}"#, "not a JSON object: - is not a number"),
        (#"{"op":"trigger","action":"a","params":{"a":"1","a":"2"}}"#, "param a is given twice: give each param once"),
        (#"{"op":"trigger","action":"a","params":{"a":"1","\u0061":"2"}}"#, "param a is given twice: give each param once"),
        (#"{"op":"trigger","action":"a","params":{"x":"1","é":"2","e\u0301":"3"}}"#, "param é is given twice: give each param once"),
        (#"{"op":"history","filter":{"params":{"env":"a","env":"b"}}}"#, "filter.params: param env is given twice: give each param once"),
        (#"{"op":"trigger","op":"ping","action":"a"}"#, "op is given twice: give each field once"),
        (#"{"op":"history","filter":{"limit":1,"limit":2}}"#, "filter.limit is given twice: give each field once"),
    ])
    func refused(line: String, message: String) throws {
        let error = try #require(Self.refusal(line))
        #expect(error.code == .badRequest)
        #expect(error.message.hasPrefix(message), "\(error.message)")
    }

    @Test("the same fields, right, are taken", arguments: [
        #"{"id":7,"op":"ping"}"#, #"{"id":"x","op":"ping"}"#, #"{"id":-9223372036854775808,"op":"ping"}"#,
        #"{"op":"history","filter":{"limit":100000,"since":0}}"#, #"{"op":"history","filter":{"limit":1e2}}"#, #"{"op":"show","run":42}"#,
        #"{"op":"trigger","action":"a","params":{"a":"1","A":"2","b":"{\"a\":1,\"a\":2}"}}"#,
        #"{"op":"history","filter":{"params":{"a":"1"}},"params":{"a":"2"}}"#,
        #"{"op":"history","filter":{"params":{"a":"2e-","b":"01 \" 1."}}}"#, #"{"op":"history","filter":{"limit":1E+2,"since":-0}}"#,
    ])
    func taken(line: String) {
        #expect(Self.refusal(line) == nil)
    }
}
