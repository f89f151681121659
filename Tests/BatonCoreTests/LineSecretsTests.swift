import BatonCore
import Testing

/// A line's entries keep `***` for each secret param, so equal params say nothing of the values.
@Suite("A key's line and secret params")
struct LineSecretsTests {
    static func decide(secret: Bool) -> KeyDecision {
        var action = Action(name: "deploy", exec: ["true"], params: ["token": ParamSpec(secret: secret)])
        action.policy = .queue
        action.queueDepth = 3
        var view = KeyDecision.View(slot: KeySlot(holder: 1, line: [2]), now: Timestamp(rawValue: 10))
        view.lineParams[2] = ["token": "***"]
        var slot = view.slot
        return KeyDecision.decide(KeyDecision.Asked(action: action, policy: .queue, params: ["token": "***"]), view, slot: &slot,
                                  candidate: { 3 })
    }

    @Test("a trigger of an action with a secret param gets an entry of its own: it never joins one whose *** hides another value")
    func secretsNeverJoin() {
        guard case let .created(decision, _) = Self.decide(secret: true) else { Issue.record("no run made"); return }
        #expect(decision == .followUp(3, after: 2))
    }

    @Test("without secrets, equal params join the waiting entry")
    func equalParamsJoin() {
        guard case let .shared(decision) = Self.decide(secret: false) else { Issue.record("a run was made"); return }
        #expect(decision == .coalesced(2))
    }
}
