@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Testing

/// A process attempt's life as tables: each story is a list of events with the effects each must
/// give, so that every rule (leftovers stopped before the end, SIGKILL after the grace, a stop
/// that comes early or late, `leftovers: "keep"`) is one row that says it.
@Suite("Attempt machine")
struct AttemptMachineTests {
    typealias Event = AttemptMachine.Event
    typealias Effect = AttemptMachine.Effect

    struct Story: CustomTestStringConvertible, Sendable {
        var name: String
        var keep = false
        var spawning = false
        var steps: [(Event, [Effect])]
        var testDescription: String { name }
    }

    static let grace = Duration.milliseconds(200)

    static let stories: [Story] = [
        Story(name: "a leader alone: it exits, its tree is empty, the attempt ends", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 0)]),
        ]),
        Story(name: "leftovers after the leader (setsid, double fork): SIGTERM, and the end waits for the tree to empty", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([41, 42]), [.terminate, .armGrace(grace)]),
            (.tree([42]), []),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 2)]),
        ]),
        Story(name: "a leftover that ignores SIGTERM is killed after killGrace; then the end", steps: [
            (.leaderExited(exitCode: 3, signal: 0), [.watchTree]),
            (.tree([41]), [.terminate, .armGrace(grace)]),
            (.graceElapsed, [.kill, .armGiveUp]),
            (.tree([]), [.end(exitCode: 3, signal: 0, leftovers: 1)]),
        ]),
        Story(name: "a leftover forked after the first look counts too", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([41]), [.terminate, .armGrace(grace)]),
            (.tree([43]), []),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 2)]),
        ]),
        Story(name: "a stop while the leader runs: SIGTERM to the tree, SIGKILL after its grace, the end once all are gone", steps: [
            (.stop(grace: .seconds(1)), [.terminate, .armGrace(.seconds(1))]),
            (.graceElapsed, [.kill]),
            (.leaderExited(exitCode: -1, signal: 9), [.watchTree, .armGiveUp]),
            (.tree([]), [.end(exitCode: -1, signal: 9, leftovers: 0)]),
        ]),
        Story(name: "a second stop with a shorter grace arms it; SIGTERM goes once", steps: [
            (.stop(grace: .seconds(30)), [.terminate, .armGrace(.seconds(30))]),
            (.stop(grace: .seconds(1)), [.armGrace(.seconds(1))]),
            (.graceElapsed, [.kill]),
            (.graceElapsed, []),
            (.stop(grace: .seconds(1)), []),
        ]),
        Story(name: "a stop heeded: the leader exits on SIGTERM, what it left is already told", steps: [
            (.stop(grace: grace), [.terminate, .armGrace(grace)]),
            (.leaderExited(exitCode: -1, signal: 15), [.watchTree]),
            (.tree([44]), []),
            (.tree([]), [.end(exitCode: -1, signal: 15, leftovers: 1)]),
        ]),
        Story(name: "a stop while draining leftovers: no second SIGTERM, its grace armed", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([41]), [.terminate, .armGrace(grace)]),
            (.stop(grace: .milliseconds(50)), [.armGrace(.milliseconds(50))]),
            (.graceElapsed, [.kill, .armGiveUp]),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 1)]),
        ]),
        Story(name: "a process forked after SIGKILL went out (no cgroup to catch it) is killed when found", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([41]), [.terminate, .armGrace(grace)]),
            (.graceElapsed, [.kill, .armGiveUp]),
            (.tree([41, 45]), [.kill]),
            (.tree([45]), []),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 2)]),
        ]),
        Story(name: "processes stuck after SIGKILL are given up on, bounded", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([41]), [.terminate, .armGrace(grace)]),
            (.graceElapsed, [.kill, .armGiveUp]),
            (.tree([41]), []),
            (.giveUp, [.end(exitCode: 0, signal: 0, leftovers: 1)]),
        ]),
        Story(name: "leftovers: keep — the attempt ends with its leader, nothing is signalled", keep: true, steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.end(exitCode: 0, signal: 0, leftovers: 0)]),
            (.tree([41]), []),
            (.graceElapsed, []),
        ]),
        Story(name: "after the end nothing more happens", steps: [
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 0)]),
            (.stop(grace: grace), []),
            (.tree([41]), []),
            (.leaderExited(exitCode: 1, signal: 0), []),
            (.giveUp, []),
        ]),
        Story(name: "spawned off the loop: it runs once born, and ends as any other", spawning: true, steps: [
            (.spawned, []),
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 0)]),
        ]),
        Story(name: "a stop while spawning waits for the birth: SIGTERM the moment it is born, SIGKILL after its grace", spawning: true, steps: [
            (.stop(grace: .seconds(1)), []),
            (.spawned, [.terminate, .armGrace(.seconds(1))]),
            (.stop(grace: .seconds(1)), [.armGrace(.seconds(1))]),
            (.graceElapsed, [.kill]),
            (.leaderExited(exitCode: -1, signal: 9), [.watchTree, .armGiveUp]),
            (.tree([]), [.end(exitCode: -1, signal: 9, leftovers: 0)]),
        ]),
        Story(name: "two stops while spawning: the last grace is armed at the birth, SIGTERM goes once", spawning: true, steps: [
            (.stop(grace: .seconds(30)), []),
            (.stop(grace: .milliseconds(50)), []),
            (.spawned, [.terminate, .armGrace(.milliseconds(50))]),
            (.leaderExited(exitCode: -1, signal: 15), [.watchTree]),
            (.tree([]), [.end(exitCode: -1, signal: 15, leftovers: 0)]),
        ]),
        Story(name: "a spawn that fails ends the attempt unstarted, a stop before it included; nothing after", spawning: true, steps: [
            (.stop(grace: grace), []),
            (.spawnFailed, [.endUnstarted]),
            (.spawned, []),
            (.stop(grace: grace), []),
        ]),
        Story(name: "before the birth nothing but a stop counts (stale looks and timers)", spawning: true, steps: [
            (.tree([41]), []),
            (.graceElapsed, []),
            (.giveUp, []),
            (.leaderExited(exitCode: 0, signal: 0), []),
            (.spawned, []),
            (.spawned, []),
            (.spawnFailed, []),
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
        ]),
        Story(name: "a look at the tree before the leader exits changes nothing (it is the leader's to end)", steps: [
            (.tree([41]), []),
            (.giveUp, []),
            (.leaderExited(exitCode: 0, signal: 0), [.watchTree]),
            (.tree([]), [.end(exitCode: 0, signal: 0, leftovers: 0)]),
        ]),
    ]

    @Test("each story gives its effects step by step", arguments: stories)
    func story(_ story: Story) {
        var machine = AttemptMachine(killGrace: Self.grace, keepLeftovers: story.keep, spawning: story.spawning)
        for (index, (event, expected)) in story.steps.enumerated() {
            #expect(machine.handle(event) == expected, "step \(index + 1): \(event)")
        }
    }

    @Test("random events: the attempt ends at most once, never before its leader exits, and never while a look found processes")
    func randomWalk() {
        var random = SplitMix(seed: 7)
        func pick(_ count: Int) -> Int { Int(random.unit() * Double(count)) }
        for _ in 0..<2_000 {
            var machine = AttemptMachine(killGrace: Self.grace, keepLeftovers: pick(2) == 0, spawning: pick(2) == 0)
            var ended = 0, leaderGone = false, killed = false, born = machine.phase != .spawning, stopped = false, terminated = false
            for _ in 0..<12 {
                let event: Event = switch pick(8) {
                case 6: .spawned
                case 7: pick(4) == 0 ? .spawnFailed : .spawned
                case 0: .stop(grace: .milliseconds(Int64(1 + pick(100))))
                case 1: .leaderExited(exitCode: 0, signal: 0)
                case 2: .tree([])
                case 3: .tree([Int32(2 + pick(8))])
                case 4: .graceElapsed
                default: .giveUp
                }
                let wasSpawning = machine.phase == .spawning
                let effects = machine.handle(event)
                if case .stop = event { stopped = true }
                if wasSpawning, event == .spawned { born = true }
                if wasSpawning, event == .spawnFailed { #expect(effects == [.endUnstarted]); ended += 1 }
                if case .leaderExited = event, born { leaderGone = true }
                // Nothing is signalled before the birth; a stop asked before it is heeded at it.
                if !born { #expect(!effects.contains(.terminate) && !effects.contains(.kill)) }
                if wasSpawning, event == .spawned, stopped { #expect(effects.first == .terminate) }
                if effects.contains(.terminate) { #expect(!terminated, "SIGTERM twice"); terminated = true }
                for effect in effects {
                    if case .end = effect {
                        ended += 1
                        #expect(leaderGone, "ended before the leader exited")
                        if case let .tree(members) = event { #expect(members.isEmpty) }
                        if case .giveUp = event { #expect(killed, "gave up before SIGKILL") }
                    }
                    if case .kill = effect { killed = true }
                }
            }
            #expect(ended <= 1)
        }
    }
}
