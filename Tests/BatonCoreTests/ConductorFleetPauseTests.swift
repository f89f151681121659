@testable import BatonCore
@testable import BatonEngine
import Testing

/// Pause in a fleet host's conductor (issue 40, item 4, fleet-wide): the pauses its feed reads
/// from the database become its own view (`pausesSeen`), with nothing written; and
/// `pauseAfterFailures` is left to the store, which counts over every host's runs
/// (`storeCountsFailures`, `JournalEntry.failureStreak`), deciding with the engine's
/// `ActionPause.afterFailures`.
@Suite("Conductor: pause in a fleet host")
struct ConductorFleetPauseTests {
    typealias Rig = ConductorDebounceTests.Rig

    static let pause = ConductorPauseTests.pause()

    @Test("pauses another host made hold here once seen: a trigger is refused with it, a queued run waits; seen gone, the run starts; nothing is written")
    func seen() {
        let queue = Action(name: "deploy", exec: ["true"], policy: .queue)
        var rig = Rig()
        rig.trigger(queue, at: 0)
        rig.trigger(queue, at: 0)
        let before = rig.written.count
        rig.handle(.pausesSeen([Self.pause], readAt: rig.now))
        #expect(rig.written.count == before, "a pause seen is durable already: nothing to write")
        #expect(rig.state.pause(of: "deploy", at: rig.now) == Self.pause)
        rig.exit(1, at: 10)
        #expect(rig.launched == [1], "the follow-up waits while the pause holds")
        let reject = Action(name: "deploy", exec: ["true"], policy: .reject)
        let refused = rig.trigger(reject, at: 11)
        #expect(rig.answers[refused] == .failed(.paused(Self.pause)))
        // The same list again changes nothing; a list without it is a resume on another host.
        rig.handle(.pausesSeen([Self.pause], readAt: rig.now))
        #expect(rig.launched == [1])
        let written = rig.written.count
        rig.handle(.pausesSeen([], readAt: rig.now))
        #expect(rig.state.pause(of: "deploy", at: rig.now) == nil && rig.launched == [1, 2])
        #expect(rig.written.count == written + 1, "only the follow-up's start: \(rig.written[written...])")
    }

    @Test("a read begun before this host paused or resumed says nothing of that action; a read older than the last one applied says nothing at all")
    func staleReads() {
        var rig = Rig()
        rig.at(10)
        rig.handle(.pause(100, Self.pause))
        rig.handle(.pausesSeen([], readAt: rig.now + .seconds(-1)))
        #expect(rig.state.pause(of: "deploy", at: rig.now) == Self.pause, "a read begun before the pause does not undo it")
        rig.at(20)
        rig.handle(.resume(101, action: "deploy", by: "bob"))
        rig.handle(.pausesSeen([Self.pause], readAt: rig.now + .seconds(-1)))
        #expect(rig.state.pause(of: "deploy", at: rig.now) == nil, "nor one begun before the resume")
        var other = Self.pause
        other.action = "backup"
        rig.handle(.pausesSeen([other], readAt: rig.now + .seconds(5)))
        rig.handle(.pausesSeen([], readAt: rig.now + .seconds(4)))
        #expect(rig.state.pause(of: "backup", at: rig.now) == other, "an older read landing late is ignored")
        rig.handle(.pausesSeen([], readAt: rig.now + .seconds(6)))
        #expect(rig.state.pause(of: "backup", at: rig.now) == nil)
    }

    @Test("pauseAfterFailures decides once, for a host and a fleet: short of the count, or paused already, no pause; at it, the pause names the last run")
    func afterFailuresRule() {
        var last = RunSnapshot(id: 9, action: "deploy", key: "deploy", phase: .failure, policy: .reject, params: [:], trigger: nil, queuedAt: Rig.start)
        last.error = "exited with status 1"
        #expect(ActionPause.afterFailures(streak: 2, most: 3, last: last, paused: false, at: Rig.start) == nil)
        #expect(ActionPause.afterFailures(streak: 3, most: 3, last: last, paused: true, at: Rig.start) == nil)
        let pause = ActionPause.afterFailures(streak: 3, most: 3, last: last, paused: false, at: Rig.start)
        #expect(pause == ActionPause(action: "deploy", by: ActionPause.afterFailures, reason: "3 failures in a row (the last, run 9: exited with status 1)",
                                     at: Rig.start))
    }

    @Test("a pause seen whose end moved later keeps holding until the new end")
    func seenMoved() {
        let queue = Action(name: "deploy", exec: ["true"], policy: .queue)
        var rig = Rig()
        rig.trigger(queue, at: 0)
        rig.trigger(queue, at: 0)
        rig.handle(.pausesSeen([ConductorPauseTests.pause(until: 20)], readAt: rig.now))
        rig.exit(1, at: 10)
        rig.handle(.pausesSeen([ConductorPauseTests.pause(until: 40)], readAt: rig.now))
        rig.at(30)
        #expect(rig.launched == [1], "the first end passed, the moved one holds")
        rig.at(40)
        #expect(rig.launched == [1, 2])
    }

    @Test("with the store counting failures, each success and failure of an action with pauseAfterFailures is handed over in its end's item, and the conductor pauses nothing itself")
    func storeCounts() {
        var flaky = ConductorPauseTests.deploy
        flaky.pauseAfterFailures = 2
        var rig = Rig()
        rig.state.storeCountsFailures = true
        for (index, status) in [1, 1, 0, 1].enumerated() {
            let run = Int64(index + 1)
            rig.trigger(flaky, at: Double(2 * index))
            let before = rig.written.count
            rig.exit(run, status: Int32(status), at: Double(2 * index + 1))
            let item = Array(rig.written[before...])
            let counted = item.contains { $0 == .failureStreak(run: run, action: "deploy", most: 2) }
            #expect(counted, "run \(run): \(item)")
            #expect(!item.contains { if case .pause = $0 { true } else { false } }, "run \(run): \(item)")
            if case let .transition(end)? = item.first(where: { if case .transition = $0 { true } else { false } }) {
                #expect(end.runID == run && end.to.isTerminal, "the end comes before its count")
            }
        }
        #expect(rig.state.pause(of: "deploy", at: rig.now) == nil)
    }

    struct Streak: CustomTestStringConvertible, Sendable {
        var name: String
        var phases: [Phase]
        var since: Int64?
        var streak: Int
        var testDescription: String { name }
    }

    static let streaks: [Streak] = [
        Streak(name: "none ended", phases: [], streak: 0),
        Streak(name: "failures up to a success", phases: [.failure, .failure, .success, .failure], streak: 2),
        Streak(name: "a success last", phases: [.success, .failure], streak: 0),
        Streak(name: "all failures", phases: [.failure, .failure, .failure], streak: 3),
        Streak(name: "a pause or resume between starts the count again", phases: [.failure, .failure, .failure], since: -25, streak: 2),
    ]

    @Test("failureStreak counts the newest failures in a row, back to a success or the last pause or resume", arguments: streaks)
    func failureStreak(_ row: Streak) {
        // Newest first, 10 s apart, the newest ending at -10 s.
        let runs = row.phases.enumerated().map { index, phase in
            var run = RunSnapshot(id: Int64(100 - index), action: "deploy", key: "deploy", phase: phase, policy: .reject, params: [:],
                                  trigger: nil, queuedAt: Rig.start + .seconds(-11 - 10 * Int64(index)))
            run.endedAt = Rig.start + .seconds(-10 - 10 * Int64(index))
            return run
        }
        #expect(ConductorState.failureStreak(runs, since: row.since.map { Rig.start + .seconds($0) }) == row.streak)
    }
}
