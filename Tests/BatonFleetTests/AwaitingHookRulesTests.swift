import BatonCore
@testable import BatonFleet
import Testing

/// The one rule for whether a run's hooks fire (`HookTargets.fire(for:)`, `awaiting`), and the
/// keys a trigger batch locks for the awaiting hooks its new runs may fire (`FleetHooks.awaitingKeys`).
@Suite("Awaiting hooks: which fire, and the keys a trigger locks for them")
struct AwaitingHookRulesTests {
    static let rule = ApprovalRule(by: ["user:root"], approvers: AccessRule(users: [0]))

    /// An action named `name` that waits for approval when `approve`, whose awaiting hook is `hook`.
    static func action(_ name: String, approve: Bool = true, awaiting hook: Action? = nil, chain: Bool = false) -> Action {
        var action = Action(name: name, exec: ["true"])
        if approve { action.approve = rule }
        if let hook { action.hooks = HookTargets(targets: [.awaiting: HookTarget(action: hook, params: [:])], chain: chain) }
        return action
    }

    static func run(of action: Action, hook: Bool) -> RunSnapshot {
        var run = RunSnapshot(id: 9, action: action.name, key: action.name, phase: .queued, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        if hook { run.hook = HookCause(run: 3, action: "build", event: .success) }
        return run
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let chain: Bool
        let hookRun: Bool
        let fires: Bool
        var testDescription: String { name }
    }

    @Test("fire(for:) and awaiting: a run that is no hook's fires; a hook's run only with on.chain", arguments: [
        Case(name: "a triggered run, no chain", chain: false, hookRun: false, fires: true),
        Case(name: "a triggered run, chain", chain: true, hookRun: false, fires: true),
        Case(name: "a hook's run, no chain", chain: false, hookRun: true, fires: false),
        Case(name: "a hook's run, chain", chain: true, hookRun: true, fires: true),
    ])
    func fires(_ given: Case) {
        let deploy = Self.action("deploy", awaiting: Self.action("announce", approve: false), chain: given.chain)
        let run = Self.run(of: deploy, hook: given.hookRun)
        #expect(deploy.hooks.fire(for: run) == given.fires)
        #expect(deploy.hooks.fires(hookRun: given.hookRun) == given.fires)
        #expect(deploy.hooks.awaiting(run)?.key == (given.fires ? "announce" : nil))
        #expect(HookTargets().awaiting(run) == nil, "no awaiting hook, none")
    }

    @Test("awaitingKeys: none without approve, none for a hook's run without chain, the hook's key otherwise")
    func oneDeep() {
        let announce = Self.action("announce", approve: false)
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", approve: false, awaiting: announce), hookRun: false) == [],
                "no approve: the run never waits, so nothing is locked")
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: announce), hookRun: true) == [],
                "a hook's run without on.chain fires no hook")
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: announce, chain: true), hookRun: true) == ["announce"])
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: announce), hookRun: false) == ["announce"])
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy"), hookRun: false) == [], "approve but no awaiting hook")
    }

    @Test("awaitingKeys: a two-deep chain (the hook's run waits too and chains) locks both keys; without its chain only the first")
    func twoDeep() {
        let notify = Self.action("notify", approve: false)
        let chained = Self.action("announce", awaiting: notify, chain: true)
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: chained), hookRun: false) == ["announce", "notify"])
        let unchained = Self.action("announce", awaiting: notify)
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: unchained), hookRun: false) == ["announce"])
        let noWait = Self.action("announce", approve: false, awaiting: notify, chain: true)
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: noWait), hookRun: false) == ["announce"],
                "a hook's run that does not wait fires no awaiting hook")
    }

    @Test("awaitingKeys: a chain that comes back to a key (a hook awaiting itself) names each key once and ends")
    func duplicateKey() {
        let inner = Self.action("announce", approve: true)
        var loop = Self.action("announce", awaiting: inner, chain: true)
        loop.hooks = HookTargets(targets: [.awaiting: HookTarget(action: loop, params: [:])], chain: true)
        #expect(FleetHooks.awaitingKeys(of: Self.action("deploy", awaiting: loop), hookRun: false) == ["announce"])
        #expect(FleetHooks.keys(of: [Self.action("deploy", awaiting: loop)]) == ["announce"], "the hook's key once among an end's keys")
    }

    @Test("an end for needs locks its hooks' keys (and their awaiting hooks') with its run's, up front; without its action, only the run's")
    func needsEndLocks() {
        var build = Self.action("build", approve: false)
        build.hooks = HookTargets(targets: [.failure: HookTarget(action: Self.action("page", awaiting: Self.action("announce", approve: false), chain: true),
                                                                 params: [:])])
        let locks = FleetNeeds.keyLocks(7, build)
        #expect(locks.count == 2, "the hook keys' rows made, then every key locked in one statement")
        #expect(locks.first?.parameters == [#"{"announce","page"}"#])
        #expect(locks.last?.parameters == ["{7}", #"{"announce","page"}"#])
        #expect(FleetNeeds.keyLocks(7, nil).map(\.parameters) == [["{7}", "{}"]])
    }
}
