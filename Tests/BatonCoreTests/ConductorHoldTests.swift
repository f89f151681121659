@testable import BatonCore
@testable import BatonEngine
import Testing

/// `baton pause ACTION --hold` (issue 40, item 4) in the conductor's state: while a held pause
/// lasts, triggers are queued, not refused (single flight applies: a queued run holds its key);
/// at the resume, or the pause's end, the runs start in trigger order.
@Suite("Conductor: held pause")
struct ConductorHoldTests {
    typealias Rig = ConductorDebounceTests.Rig

    static let deploy = Action(name: "deploy", exec: ["true"], policy: .reject)

    static func held(until seconds: Int64? = nil) -> ActionPause {
        ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Rig.start,
                    until: seconds.map { Rig.start + .seconds($0) }, hold: true)
    }

    /// A trigger of `deploy` for the key `deploy:NAME` (as `keyParams: [name]` would make it).
    static func trigger(_ rig: inout Rig, key name: String, at seconds: Double) -> ConductorState.Token {
        rig.at(seconds)
        rig.token += 1
        rig.handle(.trigger(rig.token, Trigger(action: deploy, key: "deploy:\(name)", policy: .reject, params: ["name": name], peer: nil)))
        return rig.token
    }

    @Test("held: a trigger is queued, not refused; the next of its key is rejected busy by the queued run; a resume starts it")
    func queuedNotRefused() {
        var rig = Rig()
        rig.handle(.pause(100, Self.held()))
        let first = rig.trigger(Self.deploy, at: 1)
        #expect(rig.decision(first) == .created(1) || rig.answers[first] == nil, "\(String(describing: rig.answers[first]))")
        #expect(rig.launched.isEmpty && rig.state.inFlight.map(\.id) == [1] && rig.state.inFlight.first?.phase == .queued)
        let second = rig.trigger(Self.deploy, at: 2)
        guard case let .failed(.busy(run, _, phase, _, _))? = rig.answers[second] else {
            Issue.record("not refused busy: \(String(describing: rig.answers[second]))"); return
        }
        #expect(run == 1 && phase == .queued, "single flight: the held run holds its key")
        #expect(!rig.records.contains(.paused), "nothing is refused paused")
        rig.handle(.resume(101, action: "deploy", by: "bob"))
        #expect(rig.launched == [1])
        #expect(rig.answers[first] != nil, "the trigger is answered once its run started")
    }

    @Test("held: at the resume the runs start in trigger order, key by key, under the global limit")
    func triggerOrder() {
        for limit in [1, 4] {
            var rig = Rig()
            rig.state = ConductorState(maxConcurrentRuns: limit, seed: 1)
            rig.handle(.pause(100, Self.held()))
            for (second, name) in ["zeta", "alpha", "mid", "beta"].enumerated() { _ = Self.trigger(&rig, key: name, at: Double(second)) }
            #expect(rig.launched.isEmpty)
            rig.handle(.resume(101, action: "deploy", by: "bob"))
            if limit == 1 {
                for id in Int64(1)...3 { rig.exit(id, at: Double(10 + id)) }
            }
            #expect(rig.launched == [1, 2, 3, 4], "limit \(limit)")
        }
    }

    @Test("held for a time: a run queued while it holds starts at its end, by its own timer")
    func timedHold() {
        var rig = Rig()
        rig.handle(.pause(100, Self.held(until: 60)))
        rig.trigger(Self.deploy, at: 10)
        rig.at(59)
        #expect(rig.launched.isEmpty)
        rig.at(60)
        #expect(rig.launched == [1])
    }

    @Test("held: a scheduled slot is queued too (not skipped), and the key's policy coalesces the next slot into it")
    func slotsQueue() {
        var rig = Rig()
        rig.handle(.pause(100, Self.held()))
        for (token, slot) in [(1, 0), (2, 3_600)] as [(ConductorState.Token, Int64)] {
            rig.handle(.trigger(token, Trigger(action: Self.deploy, key: "deploy", policy: .reject, params: [:], peer: nil,
                                               slot: Rig.start + .seconds(slot))))
        }
        #expect(!rig.records.contains(.skipped) && rig.state.inFlight.map(\.id) == [1])
        rig.handle(.resume(101, action: "deploy", by: "bob"))
        #expect(rig.launched == [1])
    }

    @Test("a held pause's message and what its runs wait for say who, why and until when")
    func messages() {
        let now = Rig.start + .seconds(30)
        #expect(BatonError.paused(Self.held()).message(at: now) == "deploy is held by alice until resumed: migrating db")
        #expect(Self.held(until: 90).holding(at: now) == "held by pause (alice: migrating db) for 1m00s more")
        #expect(Self.held().refuses(at: now) == false && Self.held().holds(at: now))
    }

    @Test("a held pause survives a restart: the history's pause still queues, and the runs queued again wait for the resume")
    func remembered() {
        var rig = Rig()
        rig.state.remember(pauses: [Self.held()])
        let first = rig.trigger(Self.deploy, at: 1)
        #expect(rig.answers[first].map { if case .failed = $0 { false } else { true } } ?? true)
        #expect(rig.launched.isEmpty && rig.state.inFlight.count == 1)
        rig.handle(.resume(101, action: "deploy", by: "bob"))
        #expect(rig.launched == [1])
    }
}
