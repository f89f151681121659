@testable import BatonEngine
import Foundation
import Testing

/// `Transition` with its detail behind one reference (issue 39): still a value, its `Codable` the
/// synthesized one of the struct it replaced (the golden texts are what that one wrote), and `==`
/// the fields', whether or not two transitions share a storage.
@Suite("Transition: the detail behind one reference")
struct TransitionStorageTests {
    static let bare = Transition(runID: 1, seq: 1, from: nil, to: .queued, at: Timestamp(rawValue: 5))
    static let bareText = #"{"at":5,"detail":{},"runID":1,"seq":1,"to":"queued"}"#

    static var fullDetail: TransitionDetail {
        var detail = TransitionDetail(
            reason: "exit", attempt: 2, exitCode: 3, signal: 9, error: "boom", by: 1000, replacedBy: 9, replaces: [4, 5],
            backoff: 1_500_000, pgid: 4242, leftovers: 1,
            usage: ResourceUsage(cpuUser: .milliseconds(512), cpuSystem: .microseconds(20), memoryPeak: 210_000_000))
        detail.via = "webhook gh"
        detail.locks = ["db", "net"]
        detail.debounce = 1_764_558_000_000_000
        return detail
    }

    static let full = Transition(runID: 7, seq: 3, from: .retrying, to: .failure, at: Timestamp(rawValue: 1_764_558_000_000_001),
                                 detail: fullDetail)
    static let fullText = #"{"at":1764558000000001,"detail":{"attempt":2,"backoff":1500000,"by":1000,"cpuSystem":20,"cpuUser":512000,"#
        + #""debounce":1764558000000000,"error":"boom","exitCode":3,"leftovers":1,"locks":["db","net"],"memoryPeak":210000000,"#
        + #""pgid":4242,"reason":"exit","replacedBy":9,"replaces":[4,5],"signal":9,"via":"webhook gh"},"from":"retrying","#
        + #""runID":7,"seq":3,"to":"failure"}"#

    static func sorted(_ transition: Transition) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try String(decoding: encoder.encode(transition), as: UTF8.self)
    }

    @Test("with sorted keys, the bytes the synthesized Codable wrote: a nil from left out, every detail field named")
    func encoding() throws {
        #expect(Mirror(reflecting: Self.fullDetail).children.allSatisfy { "\($0.value)" != "nil" })
        #expect(try Self.sorted(Self.bare) == Self.bareText)
        #expect(try Self.sorted(Self.full) == Self.fullText)
    }

    @Test("the golden texts decode back to equal transitions; a missing detail is refused, an absent from is nil")
    func decoding() throws {
        #expect(try JSONDecoder().decode(Transition.self, from: Data(Self.bareText.utf8)) == Self.bare)
        #expect(try JSONDecoder().decode(Transition.self, from: Data(Self.fullText.utf8)) == Self.full)
        #expect(try JSONDecoder().decode(Transition.self, from: Data(#"{"at":5,"detail":{},"from":null,"runID":1,"seq":1,"to":"queued"}"#.utf8)) == Self.bare)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Transition.self, from: Data(#"{"at":5,"runID":1,"seq":1,"to":"queued"}"#.utf8))
        }
    }

    @Test("equal fields in separate storages are equal; a transition differing only in its detail is not")
    func equality() {
        let again = Transition(runID: 7, seq: 3, from: .retrying, to: .failure, at: Timestamp(rawValue: 1_764_558_000_000_001),
                               detail: Self.fullDetail)
        #expect(again.detailStorage !== Self.full.detailStorage)
        #expect(again == Self.full)
        var other = again
        other.detail.leftovers = 2
        #expect(other != Self.full)
        #expect(Transition(runID: 1, seq: 1, from: nil, to: .queued, at: Timestamp(rawValue: 5), detail: TransitionDetail()) == Self.bare)
        #expect(Transition(runID: 1, seq: 1, from: nil, to: .queued, at: Timestamp(rawValue: 5), detail: TransitionDetail(attempt: 1)) != Self.bare)
    }

    @Test("setting the detail of a copy leaves the original's as it was")
    func copyThenSet() {
        let original = Self.full
        var copy = original
        #expect(copy.detailStorage === original.detailStorage)
        copy.detail.reason = "timeout"
        copy.detail.locks?.append("gpu")
        #expect(copy.detailStorage !== original.detailStorage)
        #expect(original.detail == Self.fullDetail && original == Self.full)
        #expect(copy.detail.reason == "timeout" && copy.detail.locks == ["db", "net", "gpu"] && copy != original)
    }

    @Test("dump shows the detail's fields, as it did for the struct")
    func reflected() {
        let children = Mirror(reflecting: Self.full).children
        #expect(children.compactMap(\.label) == ["runID", "seq", "from", "to", "at", "detail"])
        #expect(children.map(\.value).last as? TransitionDetail == Self.fullDetail)
    }
}
