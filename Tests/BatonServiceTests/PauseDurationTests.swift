import BatonCore
@testable import BatonService
import Testing

/// A pause's end is `now + duration`: a duration past any timestamp must be refused, not trap.
@Suite("Service: a pause's duration")
struct PauseDurationTests {
    @Test("a duration too long for a timestamp, or not above 0, is bad_request; batond goes on", arguments: [Int64.max, 0, -5])
    func refused(duration: Int64) async throws {
        let fixture = Fixture()
        let answer = try #require(await fixture.ask(#"{"id":1,"op":"pause","action":"deploy","reason":"r","duration":\#(duration)}"#,
                                                    as: Recorder(uid: 0)))
        #expect(answer.ok == false && answer.error?.code == .badRequest)
        #expect(try #require(await fixture.ask(#"{"id":2,"op":"ping"}"#, as: Recorder(uid: 0))).ok == true)
    }
}
