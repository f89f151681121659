import BatonCore
import FoundationEssentials

/// A run's needs asked on the fleet: its owner triggers each needed action through its own
/// trigger path (`trigger`, policy `join`: the key's run in flight anywhere is joined, single
/// flight holds fleet-wide), in its action's order, as one machine's conductor does
/// (`ConductorState.triggerNeeds`); then writes what it waits for (`FleetNeeds.write`). A need
/// refused (its action paused, over its rate, a param refused) ends the run `failure` at once,
/// never started; the needs asked before it go on.
extension FleetCoordinator {
    /// Asks run `run`'s needs, once at a time per run (the feed finds it again on each tick until written).
    func askNeeds(of run: RunSnapshot) {
        guard reactor.isCurrent else { return reactor.post { [self] in askNeeds(of: run) } }
        guard needsAsked.withLock({ $0.insert(run.id).inserted }) else { return }
        // An action gone from the config needs nothing now: met, its start cancels it (`claim`: removed).
        guard let action = conductor.action(named: run.action) else { return writeNeeds(of: run.id, [], failure: nil) }
        askNeed(0, of: run, action, asked: [])
    }

    private func askNeed(_ index: Int, of run: RunSnapshot, _ action: Action, asked: [NeededRun]) {
        guard index < action.needs.count else { return writeNeeds(of: run.id, asked, failure: nil) }
        let need = action.needs[index]
        let target = need.action
        let params: [String: String]
        do { params = try need.params(for: run.params) } catch {
            return writeNeeds(of: run.id, asked, failure: "needs \(target.name): \(error.message(at: .now))")
        }
        let via = "needed by \(action.name) run \(run.id)"
        let asking = Trigger(action: target, key: target.key(for: params), policy: .join, params: params, peer: run.trigger, via: via)
        trigger(asking, follower: nil) { [self] result in
            switch result {
            case let .success((decision, needed)):
                // Inside its cooldown the key's last success serves: the need is met.
                let phase: Phase = if case .cooled = decision { .success } else { needed.phase }
                let known = NeededRun(action: target.name, run: needed.id, phase: phase, reason: phase.isTerminal ? needed.reason : nil)
                reactor.onLoop { [self] in askNeed(index + 1, of: run, action, asked: asked + [known]) }
            case let .failure(error):
                writeNeeds(of: run.id, asked, failure: "needs \(target.name): \(error.message(at: .now))")
            }
        }
    }

    private func writeNeeds(of id: Int64, _ needed: [NeededRun], failure: String?) {
        pool.submit({ [self] db in try FleetNeeds.write(id, needed: needed, failure: failure, on: db, me: host.incarnation) }) { [self] result in
            if case let .failure(error) = result { log("the needs of run \(id) could not be written: \(error)") }
            needsAsked.withLock { _ = $0.remove(id) }
        }
    }
}
