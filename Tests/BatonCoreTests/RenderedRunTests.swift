import BatonCore
import Foundation
import Testing

/// A run's snapshot written once for every line that carries it (issue 39): the bytes reused
/// only for the very snapshot they were written from, and each line as the response would write it.
@Suite("RenderedRun: a snapshot's JSON written once")
struct RenderedRunTests {
    static let transition = Transition(runID: 42, seq: 4, from: .retrying, to: .cancelled, at: Timestamp(rawValue: 9),
                                       detail: TransitionDetail(reason: "cancelled", error: "cancelled", by: 1000, replaces: [1, 2]))

    static let updates: [(RequestID?, RunUpdate)] = [
        (.number(7), RunUpdate(run: WireJSONTests.run, transition: transition)),
        (.text("x/\"y\""), RunUpdate(run: WireJSONTests.complete, transition: nil)),
        (nil, RunUpdate(run: RenderedRunTests.queued, transition: transition)),
    ]

    static var queued: RunSnapshot {
        RunSnapshot(id: 3, action: "a", key: "a k=1", phase: .queued, policy: .reject, params: ["k": "1"], trigger: Peer(uid: 0, gid: 0, pid: 1),
                    queuedAt: Timestamp(rawValue: 5))
    }

    @Test("an update's line is the response's, byte for byte, with or without the run's bytes", arguments: updates.indices)
    func updateLine(index: Int) {
        let (id, update) = Self.updates[index]
        let reference = Response.update(id, update).jsonLine()
        #expect(Response.updateLine(id, update) == reference)
        #expect(Response.updateLine(id, update, rendered: RenderedRun(update.run)) == reference)
    }

    @Test("a response's line with its run's bytes is the line without them")
    func answerLine() {
        var response = Response(id: .number(1))
        response.run = WireJSONTests.complete
        response.decision = .created
        response.shared = false
        let rendered = RenderedRun(response.run!)
        #expect(rendered.isRendering(of: response.run!))
        #expect(response.jsonLine(rendered: rendered) == response.jsonLine())
    }

    @Test("bytes of another snapshot, or of this one before a change, are not used")
    func otherSnapshot() {
        var run = Self.queued
        let before = RenderedRun(run)
        run.phase = .loading
        #expect(!before.isRendering(of: run))
        var response = Response(id: .number(1))
        response.run = run
        #expect(response.jsonLine(rendered: before) == response.jsonLine())
        #expect(String(decoding: response.jsonLine(rendered: before), as: UTF8.self).contains(#""phase":"loading""#))
        let equalButOther = RenderedRun(Self.queued)
        #expect(!equalButOther.isRendering(of: Self.queued))
        let update = RunUpdate(run: run, transition: nil)
        #expect(Response.updateLine(nil, update, rendered: before) == Response.update(nil, update).jsonLine())
    }

    @Test("commas stay right past 64 levels of nesting, and back out of them", arguments: [1, 63, 64, 65, 70, 130])
    func deepNesting(depth: Int) throws {
        var json = JSONWriter()
        for _ in 0..<depth { json.beginArray(); json.int(1) }
        for _ in 0..<depth { json.int(2); json.endArray() }
        let expected = String(repeating: "[1,", count: depth) + String(repeating: "2]", count: depth).replacingOccurrences(of: "]2", with: "],2")
        #expect(json.text == expected)
        #expect(try JSONSerialization.jsonObject(with: Data(json.bytes)) is [Any])
    }
}
