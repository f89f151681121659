import BatonCore
@testable import BatonEngine
import Foundation
import Testing

/// `RunSnapshot` as one reference to its fields (a new storage per change, issue 39): still a
/// value, its `Codable` the struct's it replaced, and a copy shared until one side changes.
@Suite("RunSnapshot: one reference, a new storage per change")
struct RunSnapshotStorageTests {
    static let bare = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Timestamp(rawValue: 5))

    @Test("a change to a copy leaves the original as it was, field by field")
    func valueSemantics() {
        let original = WireJSONTests.complete
        var copy = original
        #expect(copy.isTriviallyIdentical(to: original))
        copy.phase = .success
        copy.params["env"] = "staging"
        copy.needs?.append(NeededRun(action: "c", run: 9, phase: .queued))
        var detail = TransitionDetail()
        detail.cpuUser = 5
        copy.account(detail)
        #expect(!copy.isTriviallyIdentical(to: original))
        #expect(original == WireJSONTests.complete)
        #expect(original.phase == .failure && original.params["env"] == "prod" && original.needs?.count == 2 && original.cpuUser == 1)
        #expect(copy.phase == .success && copy.params["env"] == "staging" && copy.needs?.count == 3 && copy.cpuUser == 6)
    }

    @Test("equal fields are equal whether shared or not; a differing field is not")
    func equality() {
        var other = RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                queuedAt: Timestamp(rawValue: 5))
        #expect(other == Self.bare)
        #expect(!other.isTriviallyIdentical(to: Self.bare))
        other.seq = 1
        #expect(other != Self.bare)
    }

    @Test("a change makes a new storage and leaves every other holder's fields as they were")
    func changeMakesStorage() {
        var run = Self.bare
        run.seq = 1
        let before = run
        run.seq = 2
        #expect(!run.isTriviallyIdentical(to: before))
        #expect(before.seq == 1 && run.seq == 2 && Self.bare.seq == nil)
        let applied = run.applying(Transition(runID: 1, seq: 3, from: .queued, to: .loading, at: Timestamp(rawValue: 9)))
        #expect(!applied.isTriviallyIdentical(to: run))
        #expect(applied.phase == .loading && applied.seq == 3 && applied.startedAt == Timestamp(rawValue: 9) && applied.attempts == 1)
        #expect(run.phase == .queued && run.seq == 2 && run.startedAt == nil && run.attempts == 0)
    }

    @Test("JSONEncoder writes the keys the struct's synthesized Codable wrote: nil fields left out")
    func encoderKeys() throws {
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.bare)) as? [String: Any])
        #expect(Set(object.keys) == ["id", "action", "key", "phase", "policy", "params", "queuedAt", "attempts"])
        let complete = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(WireJSONTests.complete)) as? [String: Any])
        #expect(complete.count == Mirror(reflecting: WireJSONTests.complete).children.count)
    }

    @Test("decoding reads absent optional fields as nil and refuses a missing required one")
    func decoding() throws {
        let decoded = try JSONDecoder().decode(RunSnapshot.self, from: Data(#"{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":5,"attempts":0}"#.utf8))
        #expect(decoded == Self.bare)
        let complete = try JSONDecoder().decode(RunSnapshot.self, from: JSONEncoder().encode(WireJSONTests.complete))
        #expect(complete == WireJSONTests.complete)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(RunSnapshot.self, from: Data(#"{"id":1,"action":"a","key":"a","phase":"queued","policy":"reject","params":{},"queuedAt":5}"#.utf8))
        }
    }

    @Test("dump shows the fields, as it did for the struct")
    func reflected() {
        let labels = Mirror(reflecting: Self.bare).children.compactMap(\.label)
        #expect(labels.prefix(3) == ["id", "action", "key"])
        #expect(labels.count == 34)
    }
}
