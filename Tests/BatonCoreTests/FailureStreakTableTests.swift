@testable import BatonEngine
import Testing

/// The end's count of failures in a row and the pause it makes (`FailureStreak.end`), stated as a
/// table without a store: the run as its end left it, the count and the pause as kept, the
/// store's clock in; the count to keep and the pause made out. One machine's conductor
/// (`ConductorState.countFailures`) and a fleet's end transaction (`FleetPauses.count`) ask it.
@Suite("FailureStreak.end: one rule for pauseAfterFailures, a host's table and a fleet's rows alike")
struct FailureStreakTableTests {
    static let now = Timestamp(rawValue: 100_000_000)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var phase: Phase
        var failures: Int
        /// The action's pause as kept: its end (nil: none), and whether it has none at all.
        var paused: Bool = false
        var until: Int64?
        var expected: Int?
        var pauses = false
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a success counts from zero again", phase: .success, failures: 2, expected: 0),
        Case(name: "a success while paused: zero, no pause", phase: .success, failures: 5, paused: true, expected: 0),
        Case(name: "a failure short of most adds one", phase: .failure, failures: 1, expected: 2),
        Case(name: "the most-th failure in a row pauses; the count starts again", phase: .failure, failures: 2, expected: 0, pauses: true),
        Case(name: "past most (a resume kept no count here) pauses too", phase: .failure, failures: 7, expected: 0, pauses: true),
        Case(name: "paused already (no end): counts on, no second pause", phase: .failure, failures: 2, paused: true, expected: 3),
        Case(name: "paused, its end still to come: counts on, no second pause", phase: .failure, failures: 2, paused: true,
             until: 100_000_001, expected: 3),
        Case(name: "a pause whose end passed by the store's clock holds nothing: a new pause", phase: .failure, failures: 2,
             paused: true, until: 100_000_000, expected: 0, pauses: true),
        Case(name: "a cancellation counts nothing", phase: .cancelled, failures: 2, expected: nil),
        Case(name: "a run not ended counts nothing", phase: .loading, failures: 2, expected: nil),
    ]

    @Test("the count to keep and the pause made, pauseAfterFailures: 3", arguments: cases)
    func end(_ c: Case) {
        var run = RunSnapshot(id: 42, action: "deploy", key: "deploy", phase: c.phase, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        run.error = "exit 3"
        let kept = c.paused ? ActionPause(action: "deploy", by: "alice", reason: "db", at: Timestamp(rawValue: 5),
                                          until: c.until.map(Timestamp.init(rawValue:))) : nil
        let ended = FailureStreak.end(run, most: 3, failures: c.failures, pause: kept, at: Self.now)
        #expect(ended?.failures == c.expected)
        let made = ActionPause(action: "deploy", by: ActionPause.afterFailures, reason: "\(c.failures + 1) failures in a row (the last, run 42: exit 3)",
                               at: Self.now)
        #expect(ended?.pause == (c.pauses ? made : nil), "the pause, at the store's clock")
    }
}
