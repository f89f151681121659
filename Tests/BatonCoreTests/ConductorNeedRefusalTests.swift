@testable import BatonCore
@testable import BatonEngine
import Testing

/// A need that cannot be triggered (its action paused, over its rate limit) refuses the trigger
/// of the run that needs it before anything is stopped or made (issue 40, review of item 2).
@Suite("Conductor: a need refused")
struct ConductorNeedRefusalTests {
    typealias Rig = ConductorDebounceTests.Rig

    enum Block: String, CaseIterable, Sendable { case paused, rateLimited }

    /// `name`, blocked as `block` says once `apply` runs: paused by ops, or allowed one run a minute.
    static func blocked(_ name: String, _ block: Block) -> Action {
        var action = Action(name: name, exec: ["true"])
        if block == .rateLimited { action.rateLimit = RateLimit(runs: 1, per: .seconds(60)) }
        return action
    }

    /// Makes `action` refuse its next trigger: a pause, or (rate limited) one run of it that succeeds.
    static func block(_ action: Action, _ block: Block, in rig: inout Rig, at seconds: Double) {
        switch block {
        case .paused:
            rig.at(seconds)
            rig.handle(.pause(80, ActionPause(action: action.name, by: "ops", reason: "migrating", at: rig.now)))
        case .rateLimited:
            rig.trigger(action, at: seconds)
            rig.exit(rig.state.inFlight.first { $0.action == action.name }!.id, at: seconds + 0.5)
        }
    }

    static func refusedFor(_ name: String, _ answer: ConductorState.Answer?) -> Bool {
        switch answer {
        case let .failed(.paused(pause))?: pause.action == name
        case let .failed(.rateLimited(action, _, _))?: action == name
        default: false
        }
    }

    @Test("replace: a second trigger whose need is blocked is refused naming the need; the running run is not cancelled",
          arguments: Block.allCases)
    func replaceKeepsTheRunningRun(block: Block) throws {
        let a = Self.blocked("a", block)
        var c = Action(name: "c", exec: ["true"], policy: .replace)
        c.needs = [NeedTarget(action: a, params: [:])]
        var rig = Rig()
        rig.trigger(c, at: 0)
        rig.exit(2, at: 1)
        #expect(rig.launched == [2, 1], "a's run 2 succeeded; c's run 1 runs")
        if block == .paused { Self.block(a, block, in: &rig, at: 2) }
        let second = rig.trigger(c, at: 3)
        #expect(Self.refusedFor("a", rig.answers[second]), "got \(String(describing: rig.answers[second]))")
        #expect(rig.stopped.isEmpty && rig.state.inFlight.map(\.id) == [1], "run 1 runs on; nothing made")
        #expect(!rig.written.contains { if case let .created(run, _) = $0 { run.id > 2 } else { false } })
    }

    @Test("needs [a, b] with b blocked: the trigger is refused naming b, and no run of a is made for it",
          arguments: Block.allCases)
    func noRunForNobody(block: Block) throws {
        let (a, b) = (Action(name: "a", exec: ["true"]), Self.blocked("b", block))
        var c = Action(name: "c", exec: ["true"])
        c.needs = [NeedTarget(action: a, params: [:]), NeedTarget(action: b, params: [:])]
        var rig = Rig()
        Self.block(b, block, in: &rig, at: 0)
        let before = rig.launched
        let token = rig.trigger(c, at: 2)
        #expect(Self.refusedFor("b", rig.answers[token]), "got \(String(describing: rig.answers[token]))")
        #expect(rig.launched == before && rig.state.inFlight.isEmpty, "neither a nor c was made")
        let refused = rig.written.compactMap { if case let .trigger(record) = $0, record.action == "b", record.runID == nil { record } else { nil } }
        #expect(refused.map(\.via) == ["needed by a trigger of c"])
    }
}
