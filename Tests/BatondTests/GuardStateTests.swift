@testable import batond
import Testing

/// The guard of a fleet host's runs as a value: what it kills, and when.
@Suite("GuardState: when the guard kills a host's runs")
struct GuardStateTests {
    typealias Step = (event: GuardState.Event, effects: [GuardState.Effect])

    @Test("tables of events and effects", arguments: [
        // batond gone before any renewal: kill, and the guard's work is done.
        [(.batondGone, [.killRuns(.batondGone), .exit]), (.time(5), [])],
        // no deadline yet: time alone kills nothing
        [(.time(1_000), [])],
        // renewed, then woken before the deadline, then at it
        [(.deadline(100), []), (.time(99), []), (.time(100), [.killRuns(.leaseDeadline)]), (.time(200), [])],
        // a later renewal moves the deadline on; a stale (earlier) one never moves it back
        [(.deadline(100), []), (.deadline(300), []), (.deadline(200), []), (.time(250), []), (.time(301), [.killRuns(.leaseDeadline)])],
        // after a deadline passed, a new renewal arms it again
        [(.deadline(10), []), (.time(20), [.killRuns(.leaseDeadline)]), (.deadline(40), []), (.time(41), [.killRuns(.leaseDeadline)])],
        // batond gone after a deadline passed: killed again (what started since), then done; nothing after
        [(.deadline(10), []), (.time(20), [.killRuns(.leaseDeadline)]), (.batondGone, [.killRuns(.batondGone), .exit]),
         (.deadline(50), []), (.time(60), []), (.batondGone, [])],
        // batond gone within the lease: the runs are left to their shims until the deadline, for
        // the host's next start to take back (it ends this guard); then killed, and done
        [(.deadline(100), []), (.batondGone, []), (.time(99), []), (.deadline(500), []), (.time(100), []),
         (.time(500), [.killRuns(.batondGone), .exit]), (.time(600), [])],
        // the lease given up (a clean stop): batond gone is not waited for past it; killed at once, and done
        [(.deadline(100), []), (.released, []), (.time(50), []), (.batondGone, [.killRuns(.batondGone), .exit]), (.time(100), [])],
    ] as [[Step]])
    func table(_ steps: [Step]) {
        var state = GuardState()
        for (index, step) in steps.enumerated() {
            #expect(state.handle(step.event) == step.effects, "step \(index): \(step.event)")
        }
    }

    @Test("the loop wakes at the deadline, and not at all before the first or after the end")
    func wake() {
        var state = GuardState()
        #expect(state.wake == nil)
        _ = state.handle(.deadline(42))
        #expect(state.wake == 42)
        _ = state.handle(.time(42))
        #expect(state.wake == nil)
        _ = state.handle(.deadline(50))
        _ = state.handle(.batondGone)
        // Gone within the lease: the guard still wakes at the deadline, to kill what is left then.
        #expect(state.wake == 50)
        _ = state.handle(.time(50))
        #expect(state.wake == nil)
    }

    @Test("the pipe's lines", arguments: [
        ("deadline 123", GuardState.Event.deadline(123)), ("deadline", nil), ("deadline x", nil), ("stop 1", nil), ("", nil),
        ("deadline 1 2", nil), ("released", GuardState.Event.released), ("released 1", nil),
    ] as [(String, GuardState.Event?)])
    func lines(_ line: String, _ event: GuardState.Event?) {
        #expect(GuardState.event(in: Substring(line)) == event)
    }
}
