import BatonCore
import Foundation
import Testing

@Suite("Conductor state: random walks")
struct ConductorWalkTests {
    /// Each walk is replayable from its seed (BATON_WALK_SEED=N runs just that one);
    /// BATON_WALKS=N runs more of them.
    @Test("random walks of every kind of event keep every invariant, step by step", arguments: [1, 2, 3])
    func walks(limit: Int) {
        walk(limit: limit, storeDecidesHooks: false)
    }

    @Test("random walks where the store decides hooks (a fleet host): every end that can fire hands its firing over in its own item, once, and no hook run is made here")
    func walksWithTheStoreDecidingHooks() {
        walk(limit: 2, storeDecidesHooks: true)
    }

    @Test("random walks of a host that hands runs over at shutdown: the answers to the hand-overs come before, after or never with the attempts' ends, and the drain still ends")
    func walksHandingOver() {
        walk(limit: 2, storeDecidesHooks: false, handsOver: true)
    }

    private func walk(limit: Int, storeDecidesHooks: Bool, handsOver: Bool = false) {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["BATON_WALKS"].flatMap(Int.init) ?? 150
        let seeds: [UInt64] = environment["BATON_WALK_SEED"].flatMap(UInt64.init).map { [$0] }
            ?? (0..<UInt64(count)).map { $0 &* 7919 &+ UInt64(limit) }
        var steps = 0
        for seed in seeds {
            var walk = ConductorWalk(maxConcurrentRuns: limit, seed: seed, storeDecidesHooks: storeDecidesHooks, handsOver: handsOver)
            walk.tracing = environment["BATON_WALK_TRACE"] != nil
            var choices = SeededChoices(seed: seed, budget: 3_000)
            while walk.step(&choices) {}
            walk.drain()
            steps += walk.steps
            #expect(walk.violations.isEmpty, "seed \(seed), limit \(limit): \(walk.violations)")
            if !walk.violations.isEmpty {
                if walk.tracing { try? walk.trace.joined(separator: "\n").write(toFile: "/tmp/walk-\(seed)-\(limit).txt", atomically: true, encoding: .utf8) }
                return
            }
        }
        #expect(steps > seeds.count * 500, "walks too short to mean much: \(steps) steps")
    }
}
