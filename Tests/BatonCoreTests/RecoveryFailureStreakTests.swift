@testable import BatonCore
@testable import BatonEngine
import Testing

/// A restart's interrupted runs and `pauseAfterFailures`, as a table: the failures in a row the
/// history kept (seeded before recovery, after the last pause or resume), the pause kept, and the
/// runs recovery ends `interrupted`; each such end counts on through `FailureStreak.end`, as a
/// run's own end does, and the Nth in a row pauses the action at the restart (written with the
/// ends), holding the run queued again. A streak that paused before the crash pauses no more.
@Suite("Recovery: interrupted runs count toward pauseAfterFailures at the restart")
struct RecoveryFailureStreakTests {
    typealias Rig = ConductorDebounceTests.Rig

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The history's latest successes and failures, newest first.
        var history: [Phase]
        /// The last pause or resume, seconds before the restart (run i of `history` ended i*10+10
        /// before it): the failures before it count no more.
        var since: Int64?
        /// A pause kept before the crash that still holds (made at `since`).
        var kept = false
        var interrupted = 1
        /// The reason of the pause recovery makes; nil: none made.
        var pauses: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "no failure before: one interrupted is below 2", history: [.success], pauses: nil),
        Case(name: "one failure before: the interrupted one is the 2nd in a row, a pause", history: [.failure, .success],
             pauses: "2 failures in a row (the last, run 20: batond stopped while the run was loading)"),
        Case(name: "two interrupted, nothing before: the second is the 2nd", history: [], interrupted: 2,
             pauses: "2 failures in a row (the last, run 21: batond stopped while the run was loading)"),
        Case(name: "at 2 already (pauseAfterFailures lowered since): the interrupted one pauses", history: [.failure, .failure],
             pauses: "3 failures in a row (the last, run 20: batond stopped while the run was loading)"),
        Case(name: "above 2 already: the interrupted one pauses", history: [.failure, .failure, .failure],
             pauses: "4 failures in a row (the last, run 20: batond stopped while the run was loading)"),
        Case(name: "failures before a resume count no more: one interrupted is the 1st", history: [.failure, .failure], since: 5,
             pauses: nil),
        Case(name: "the streak paused before the crash, the pause holds: no second pause", history: [.failure, .failure], since: 5,
             kept: true, interrupted: 2, pauses: nil),
    ]

    @Test("the pause made at the restart, pauseAfterFailures: 2", arguments: cases)
    func restart(_ c: Case) {
        var flaky = Action(name: "deploy", exec: ["true"], policy: .queue)
        flaky.pauseAfterFailures = 2
        // History: run i ended i*10 seconds before the restart; `since` falls between them.
        let ended = c.history.enumerated().map { index, phase in
            var run = RunSnapshot(id: Int64(10 - index), action: "deploy", key: "deploy", phase: phase, policy: .queue, params: [:],
                                  trigger: nil, queuedAt: Rig.start + .seconds(-Int64(index + 1) * 10 - 1))
            run.endedAt = Rig.start + .seconds(-Int64(index + 1) * 10)
            return run
        }
        let since = c.since.map { Rig.start + .seconds(-$0) }
        let kept = ActionPause(action: "deploy", by: "alice", reason: "db", at: since ?? Rig.start)
        var rig = Rig()
        // As batond seeds at start: the pauses with the recoverable state, the streak before recovery.
        if c.kept { rig.state.remember(pauses: [kept]) }
        rig.state.remember(failuresOf: flaky, runs: ended, since: since)
        let loading = (0..<c.interrupted).map { index in
            RecoveredRun(UnfinishedRun(run: RunSnapshot(id: 20 + Int64(index), action: "deploy", key: "k\(index)", phase: .loading,
                                                        policy: .queue, params: [:], trigger: nil, queuedAt: Rig.start + .seconds(-3)),
                                       lastSeq: 2), action: flaky)
        }
        let queued = RecoveredRun(UnfinishedRun(run: RunSnapshot(id: 30, action: "deploy", key: "other", phase: .queued, policy: .queue,
                                                                 params: [:], trigger: nil, queuedAt: Rig.start + .seconds(-2)),
                                                lastSeq: 1), action: flaky)
        rig.handle(.recover(1, loading + [queued]))
        let made = rig.written.compactMap { if case let .pause(pause) = $0 { pause } else { nil } }
        #expect(made.map(\.reason) == (c.pauses.map { [$0] } ?? []), "the pause written with recovery's ends")
        #expect(made.allSatisfy { $0.by == ActionPause.afterFailures && $0.at == Rig.start })
        let holding = c.pauses != nil || c.kept
        #expect(rig.state.pause(of: "deploy", at: rig.now) == (c.kept ? kept : made.first))
        #expect(rig.launched == (holding ? [] : [30]), "the run queued again waits while a pause holds")
        let refused = rig.trigger(flaky, at: 1)
        if holding {
            let holds = c.kept ? kept : made.first
            #expect(holds.map { .failed(.paused($0)) } == rig.answers[refused], "a trigger is refused with the pause")
        } else {
            #expect(rig.decision(refused) != nil)
        }
    }
}
