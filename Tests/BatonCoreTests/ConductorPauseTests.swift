@testable import BatonCore
@testable import BatonEngine
import Testing

/// Pause (issue 40, item 4) in the conductor's state: a paused action's triggers are refused
/// with the pause and recorded against no run; a schedule slot is skipped; a pause with an end
/// lifts by itself; a resume ends it; `pauseAfterFailures` pauses by itself; every pause and
/// resume is written before it is answered.
@Suite("Conductor: pause")
struct ConductorPauseTests {
    typealias Rig = ConductorDebounceTests.Rig

    static let deploy = Action(name: "deploy", exec: ["true"], policy: .reject)

    static func pause(until seconds: Int64? = nil) -> ActionPause {
        ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Rig.start,
                    until: seconds.map { Rig.start + .seconds($0) })
    }

    @Test("a paused action's triggers are refused with the pause and recorded as paused; nothing runs; resume lets the next run")
    func pauseAndResume() {
        var rig = Rig()
        rig.handle(.pause(100, Self.pause()))
        #expect(rig.answers[100] == .paused(Self.pause()))
        #expect(rig.written == [.pause(Self.pause())], "the pause is written before it is answered")
        let refused = rig.trigger(Self.deploy, at: 1)
        #expect(rig.answers[refused] == .failed(.paused(Self.pause())))
        #expect(rig.records == [.paused] && rig.launched.isEmpty)
        let message = BatonError.paused(Self.pause()).message(at: Rig.start + .seconds(1))
        #expect(message == "deploy is paused by alice until resumed: migrating db")
        rig.handle(.resume(101, action: "deploy", by: "bob"))
        #expect(rig.answers[101] == .paused(Self.pause()))
        #expect(rig.written.last == .resume(action: "deploy", by: "bob", at: Rig.start + .seconds(1)))
        let ran = rig.trigger(Self.deploy, at: 2)
        #expect(rig.decision(ran) == .created(1) && rig.launched == [1])
        rig.handle(.resume(102, action: "deploy", by: "bob"))
        #expect(rig.answers[102] == .paused(nil), "resuming an action not paused says so and writes nothing")
    }

    @Test("a pause with an end lifts by itself at that end; a scheduled slot while paused is recorded as skipped")
    func timedAndSkipped() {
        var rig = Rig()
        rig.handle(.pause(100, Self.pause(until: 60)))
        rig.at(30)
        rig.token += 1
        let slot = Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil, slot: Rig.start)
        rig.handle(.trigger(rig.token, slot))
        #expect(rig.answers[rig.token] == .failed(.paused(Self.pause(until: 60))))
        #expect(BatonError.paused(Self.pause(until: 60)).message(at: rig.now) == "deploy is paused by alice for 30s more: migrating db")
        #expect(rig.records == [.skipped])
        let after = rig.trigger(Self.deploy, at: 60)
        #expect(rig.decision(after) == .created(1), "exactly at its end the pause no longer holds")
    }

    @Test("pauseAfterFailures: the Nth failure in a row pauses the action in its end's item; a success starts the count again")
    func afterFailures() {
        var flaky = Self.deploy
        flaky.pauseAfterFailures = 2
        var rig = Rig()
        rig.trigger(flaky, at: 0)
        rig.exit(1, status: 1, at: 1)
        rig.trigger(flaky, at: 2)
        rig.exit(2, status: 0, at: 3)
        rig.trigger(flaky, at: 4)
        rig.exit(3, status: 1, at: 5)
        #expect(rig.state.pause(of: "deploy", at: rig.now) == nil, "the success between started the count again")
        rig.trigger(flaky, at: 6)
        let before = rig.written.count
        rig.exit(4, status: 1, at: 7)
        let item = rig.written[before...]
        guard case let .pause(pause)? = item.last else { Issue.record("no pause written with the end: \(item)"); return }
        #expect(item.contains { if case let .transition(t) = $0 { t.runID == 4 && t.to == .failure } else { false } })
        #expect(pause.by == ActionPause.afterFailures && pause.until == nil)
        #expect(pause.reason == "2 failures in a row (the last, run 4: exited with status 1)")
        let refused = rig.trigger(flaky, at: 8)
        #expect(rig.answers[refused] == .failed(.paused(pause)))
    }

    @Test("a restart keeps the failures in a row the history holds after the last pause or resume: the next failure completes the count")
    func failuresRemembered() {
        var flaky = Self.deploy
        flaky.pauseAfterFailures = 2
        let ended = { (id: Int64, phase: Phase, second: Int64) -> RunSnapshot in
            var run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Rig.start + .seconds(second - 1))
            run.endedAt = Rig.start + .seconds(second)
            return run
        }
        var rig = Rig()
        // Newest first: a failure, then a success (which started the count again).
        rig.state.remember(failuresOf: flaky, runs: [ended(11, .failure, -10), ended(10, .success, -20)], since: nil)
        rig.trigger(flaky, at: 0)
        rig.exit(1, status: 1, at: 1)
        #expect(rig.state.pause(of: "deploy", at: rig.now)?.reason.hasPrefix("2 failures in a row") == true)
        // Failures before the last resume do not count.
        var resumed = Rig()
        resumed.state.remember(failuresOf: flaky, runs: [ended(11, .failure, -10)], since: Rig.start + .seconds(-5))
        resumed.trigger(flaky, at: 0)
        resumed.exit(1, status: 1, at: 1)
        #expect(resumed.state.pause(of: "deploy", at: resumed.now) == nil)
    }

    @Test("the pauses the history kept hold after a restart; one whose end passed meanwhile does not")
    func remembered() {
        var rig = Rig()
        var other = Self.pause(until: 5)
        other.action = "backup"
        rig.state.remember(pauses: [Self.pause(), other])
        rig.at(10)
        #expect(rig.state.pause(of: "deploy", at: rig.now) == Self.pause())
        #expect(rig.state.pause(of: "backup", at: rig.now) == nil)
    }

    @Test("a run queued before the pause waits while it holds and starts when it ends: at a resume, or at a timed pause's end")
    func queuedRunsWait() {
        let queue = Action(name: "deploy", exec: ["true"], policy: .queue)
        for timed in [false, true] {
            var rig = Rig()
            rig.trigger(queue, at: 0)
            rig.trigger(queue, at: 0)
            #expect(rig.launched == [1])
            rig.handle(.pause(100, Self.pause(until: timed ? 60 : nil)))
            rig.exit(1, at: 10)
            #expect(rig.launched == [1], "the follow-up waits while the pause holds")
            if timed {
                rig.at(59)
                #expect(rig.launched == [1])
                rig.at(60)
            } else {
                rig.handle(.resume(101, action: "deploy", by: "bob"))
            }
            #expect(rig.launched == [1, 2], "timed: \(timed)")
        }
    }

    @Test("a timed pause that ended with no run waiting holds nothing: the next run starts")
    func endedUnnoticed() {
        var rig = Rig()
        rig.handle(.pause(100, Self.pause(until: 5)))
        let ran = rig.trigger(Self.deploy, at: 10)
        #expect(rig.decision(ran) == .created(1) && rig.launched == [1])
    }
}
