import BatonCore
@testable import BatonService
import Testing

/// `status` tells a client the rules around each action's runs: its cooldown (and the keys whose
/// window is open, so that a page can say a press runs nothing), `force`, and its hooks.
@Suite("Service: status and the rules around runs")
struct StatusRulesTests {
    @Test("cooling lists each key's last success only while its window is open; cooldown, force and hooks come with the action")
    func cooling() async throws {
        let store = MemoryStore()
        let conductor = Conductor(actions: [], store: store)
        var fresh = Action(name: "fresh", params: ["env": ParamSpec()], keyParams: ["env"])
        fresh.cooldown = .seconds(600)
        fresh.allowsForce = true
        let page = Action(name: "page")
        fresh.hooks = HookTargets(targets: [.failure: HookTarget(action: page, params: [:])])
        conductor.register(fresh) { _ in }
        conductor.register(page) { _ in }
        let now = Timestamp.now
        func success(_ id: Int64, _ env: String, endedAgo seconds: Int64) -> RunSnapshot {
            RunSnapshot(id: id, action: "fresh", key: "fresh env=\(env)", phase: .success, policy: .join, params: ["env": env], trigger: nil,
                        queuedAt: now + .seconds(-seconds - 1), startedAt: now + .seconds(-seconds - 1), endedAt: now + .seconds(-seconds))
        }
        // prod succeeded 2 minutes ago (inside 10m), staging 20 minutes ago (outside), dev twice: the later wins.
        conductor.remember(successes: [success(1, "prod", endedAgo: 120), success(2, "staging", endedAgo: 1_200),
                                       success(3, "dev", endedAgo: 300), success(4, "dev", endedAgo: 60)])
        await conductor.ping()
        let generation = Generation(actions: conductor.configuredActions(), access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0)
        let service = Service(conductor: conductor, history: FakeHistory(), journal: store, generation: generation,
                              hooks: Service.Hooks(reload: { _ in .applied(warnings: []) }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }), reactor: conductor.reactor)
        let caller = Recorder(uid: 0)
        service.receivedOnLoop(.line(Array(#"{"op":"status"}"#.utf8)), from: caller)
        let answer = try #require(await caller.answer())
        let info = try #require(answer.actions?.first { $0.name == "fresh" })
        #expect(info.cooling?.map(\.id) == [1, 4], "prod and dev's later success are inside the window; staging's is over")
        #expect(info.cooldown == 600_000_000 && info.force == true)
        #expect(info.hooks == HookNames(failure: "page"))
        let plain = try #require(answer.actions?.first { $0.name == "page" })
        #expect(plain.cooling == nil && plain.cooldown == nil && plain.force == nil && plain.hooks == nil)
    }
}
