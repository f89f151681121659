@testable import BatonEngine
import Testing

/// The engine's one step for a trigger a store decides alone (`KeyDecision.step`, a fleet hook's
/// trigger) and for a decided wait's end (`ApprovalState.end`), stated as tables without
/// PostgreSQL: the decision, the key's slot as the step left it, and the stops it asks, on the
/// facts a store read up front.
@Suite("KeyDecision.step and ApprovalState.end: one engine step for a hook's trigger and an approval's end")
struct KeyStepTableTests {
    static let now = Timestamp(rawValue: 100_000_000)
    static let me = "web-1/1/aa"
    static let action = Action(name: "deploy", exec: ["true"])

    static func asked(_ policy: Policy) -> KeyDecision.Asked {
        var action = action
        action.policy = policy
        return KeyDecision.Asked(hook: action)
    }

    /// The step as a store runs it, once: it asks an id (100) only where it makes a run (`makes`: how many it asked).
    static func step(_ policy: Policy, _ slot: KeySlot, stopping: [Int64: KeyFacts.Run] = [:], facts: (inout KeyFacts) -> Void = { _ in })
        -> (makes: Bool, step: KeyDecision.Step) {
        var read = KeyFacts(slot: slot, now: now)
        facts(&read)
        var asked = 0
        let step = KeyDecision.step(Self.asked(policy), read, stopping: stopping, me: me, id: { asked += 1; return 100 }, at: now)
        #expect(asked <= 1, "the step asks one id at most")
        return (asked == 1, step)
    }

    @Test("a replace: the holder and its line are the runs it may stop; another policy or a free key stops none")
    func mayStop() {
        let slot = KeySlot(holder: 7, line: [8, 9])
        #expect(KeyDecision.mayStop(Self.asked(.replace), slot: slot) == [7, 8, 9])
        #expect(KeyDecision.mayStop(Self.asked(.replace), slot: KeySlot()) == [])
        for policy in [Policy.queue, .join, .reject] { #expect(KeyDecision.mayStop(Self.asked(policy), slot: slot) == []) }
    }

    @Test("a replace of queued runs: each ends (one seq after its last) and leaves the slot the step answers, which the new run holds")
    func replaceQueued() {
        let stopping: [Int64: KeyFacts.Run] = [7: .init(phase: .queued, lastSeq: 1), 8: .init(phase: .queued, lastSeq: 3)]
        let (makes, step) = Self.step(.replace, KeySlot(holder: 7, line: [8]), stopping: stopping)
        let stop = RunMachine.Stop.replaced(by: 100)
        #expect(makes)
        #expect(step.decision == .created(.replaced(100, stopping: [7, 8]), window: nil))
        #expect(step.stops == [RunStop(run: 7, stop: stop, decision: .ends(Transition(runID: 7, seq: 2, from: .queued, to: .cancelled,
                                                                                         at: Self.now, detail: stop.detail))),
                               RunStop(run: 8, stop: stop, decision: .ends(Transition(runID: 8, seq: 4, from: .queued, to: .cancelled,
                                                                                         at: Self.now, detail: stop.detail)))])
        #expect(step.slot == KeySlot(holder: 100), "the queued runs ended: nothing drains")
    }

    @Test("a replace of a running run: its owner stops it (here where this store owns it), the slot keeps it draining; an unread or ended run needs nothing")
    func replaceRunning() {
        for (owner, here) in [("other", false), (Self.me, true)] {
            let (_, step) = Self.step(.replace, KeySlot(holder: 7), stopping: [7: .init(phase: .loading, lastSeq: 2, owner: owner)])
            #expect(step.stops == [RunStop(run: 7, stop: .replaced(by: 100), decision: .owner(here: here))])
            #expect(step.slot == KeySlot(holder: 100, draining: [7]))
        }
        for stopping in [[:], [7: KeyFacts.Run(phase: .success, lastSeq: 4)]] as [[Int64: KeyFacts.Run]] {
            let (_, step) = Self.step(.replace, KeySlot(holder: 7), stopping: stopping)
            #expect(step.stops == [])
        }
    }

    @Test("no run made: no id taken, no stop, the slot as read (a join, a reject, a replace in the cooldown)")
    func noRun() {
        for policy in [Policy.join, .reject] {
            let (makes, step) = Self.step(policy, KeySlot(holder: 7))
            #expect(!makes)
            #expect(step.stops == [])
            #expect(step.slot == KeySlot(holder: 7))
        }
        var cooled = Self.action
        cooled.policy = .replace
        cooled.cooldown = .seconds(60)
        var facts = KeyFacts(slot: KeySlot(holder: 7), now: Self.now)
        facts.lastSuccess = KeyDecision.LastSuccess(run: 5, at: Self.now + .seconds(-10))
        let asked = KeyDecision.Asked(hook: cooled)
        let step = KeyDecision.step(asked, facts, stopping: [7: .init(phase: .queued, lastSeq: 1)], me: Self.me, id: {
            Issue.record("a cooled replace takes no id")
            return 0
        }, at: Self.now)
        #expect(step.decision == .shared(.cooled(5)))
        #expect(step.stops == [], "a cooled replace stops nothing")
        #expect(step.slot == KeySlot(holder: 7))
    }

    @Test("a free key: the new run holds it, nothing stops")
    func freeKey() {
        let (makes, step) = Self.step(.replace, KeySlot())
        #expect(makes)
        #expect(step.decision == .created(.created(100), window: nil))
        #expect(step.slot == KeySlot(holder: 100))
        #expect(step.stops == [])
    }

    @Test("an approval's end: an approval stops nothing; a deny or a timeout ends a queued run, which leaves its key's slot")
    func approvalEnd() {
        let facts = KeyFacts.Run(phase: .queued, lastSeq: 1)
        let timeout = Duration.seconds(30)
        let cases: [(ApprovalState.Verdict, RunMachine.Stop?)] = [
            (.approved, nil), (.waived, nil), (.denied, .denied(by: "ann", reason: "no")), (.timedOut, .approvalTimedOut(after: timeout)),
        ]
        for (verdict, stop) in cases {
            let state = ApprovalState(by: ["ann"], until: nil, verdict: verdict, decidedBy: "ann", decidedAt: Self.now, reason: "no")
            var slot = KeySlot(holder: 7, line: [8])
            let ended = state.end(of: 7, facts, slot: &slot, timeout: timeout, queuedAt: Self.now, me: Self.me, at: Self.now)
            let end = stop.map { Transition(runID: 7, seq: 2, from: .queued, to: .cancelled, at: Self.now, detail: $0.detail) }
            #expect(ended == stop.map { RunStop(run: 7, stop: $0, decision: .ends(end!)) }, "\(verdict)")
            #expect(slot == (stop == nil ? KeySlot(holder: 7, line: [8]) : KeySlot(holder: 8)), "\(verdict)")
        }
    }
}
