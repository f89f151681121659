import BatonCore
@testable import BatonService
import Testing

/// The loop's memo of the snapshots it wrote (issue 39): a line gets the bytes of the very
/// snapshot it carries, never those of an older one of the same run, and nothing off the loop.
@Suite("RenderedRuns: each snapshot written once on the loop")
struct RenderedRunsTests {
    static let queued = RunSnapshot(id: 9, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: ["env": "prod"],
                                    trigger: Peer(uid: 1000, gid: 1000, pid: 7), queuedAt: Timestamp(rawValue: 5))

    /// Runs `body` on the reactor's loop and returns what it returns.
    func onLoop<Value: Sendable>(_ reactor: Reactor, _ body: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { (done: CheckedContinuation<Value, Never>) in
            reactor.post { done.resume(returning: body()) }
        }
    }

    @Test("the same snapshot reuses its bytes; a changed one of the same run is written anew")
    func reuse() async {
        let reactor = Reactor()
        let memo = RenderedRuns(reactor: reactor)
        var loading = Self.queued
        loading.phase = .loading
        let (first, again, changed, back) = await onLoop(reactor) { [loading] in
            (memo.rendering(of: Self.queued), memo.rendering(of: Self.queued), memo.rendering(of: loading), memo.rendering(of: Self.queued))
        }
        #expect(first?.isRendering(of: Self.queued) == true && again?.isRendering(of: Self.queued) == true)
        #expect(again?.json == RenderedRun(Self.queued).json)
        // The very bytes, not a new rendering of them.
        let address = { (run: RenderedRun?) in run?.json.withUnsafeBufferPointer { $0.baseAddress } }
        #expect(address(first) != nil && address(first) == address(again), "the same snapshot was written again")
        #expect(changed?.isRendering(of: loading) == true)
        #expect(changed?.json == RenderedRun(loading).json)
        #expect(back?.json == RenderedRun(Self.queued).json)
    }

    @Test("a final answer takes the run's bytes out, and writes them itself when none are kept")
    func last() async {
        let reactor = Reactor()
        let memo = RenderedRuns(reactor: reactor)
        let (kept, taken, again) = await onLoop(reactor) {
            (memo.rendering(of: Self.queued), memo.rendering(of: Self.queued, last: true), memo.rendering(of: Self.queued, last: true))
        }
        #expect(kept != nil && taken?.isRendering(of: Self.queued) == true && again == nil)
        var answer = Response(id: .number(1))
        answer.run = Self.queued
        let line: [UInt8] = await onLoop(reactor) { [answer] in memo.line(answer, last: true) }
        #expect(line == answer.jsonLine())
    }

    @Test("an update's line and an answer's line are those the responses write")
    func lines() async {
        let reactor = Reactor()
        let memo = RenderedRuns(reactor: reactor)
        var answer = Response(id: .number(3))
        answer.run = Self.queued
        answer.decision = .created
        let update = RunUpdate(run: Self.queued, transition: Transition(runID: 9, seq: 1, from: nil, to: .queued, at: Timestamp(rawValue: 5)))
        let (answerLine, updateLine) = await onLoop(reactor) { [answer] in (memo.line(answer), memo.updateLine(.text("w"), update)) }
        #expect(answerLine == answer.jsonLine())
        #expect(updateLine == Response.update(.text("w"), update).jsonLine())
    }

    @Test("off the loop nothing is kept: the line writes its snapshot itself")
    func offLoop() {
        let memo = RenderedRuns(reactor: Reactor())
        #expect(memo.rendering(of: Self.queued) == nil)
        var answer = Response(id: nil)
        answer.run = Self.queued
        #expect(memo.line(answer) == answer.jsonLine())
    }
}
