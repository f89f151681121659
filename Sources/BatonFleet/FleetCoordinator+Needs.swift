import BatonCore
import FoundationEssentials

/// A run's needs asked on the fleet: its owner triggers each needed action through its own
/// trigger path (`trigger`, policy `join`: the key's run in flight anywhere is joined, single
/// flight holds fleet-wide), in its action's order, as one machine's conductor does
/// (`ConductorState.triggerNeeds`); then writes what it waits for (`FleetNeeds.write`). A need
/// that would be refused when the run was triggered refused that trigger (`KeyDecision.needRefusal`,
/// in the batch); one refused only now (its action paused since, over its rate, a param refused)
/// ends the run `failure` at once, never started; the needs asked before it go on. A need that could not be asked now (the
/// store unavailable, batond shutting down) leaves the run asking: the next tick asks again
/// (the needs asked before it are joined, not made twice). A run whose needed run a host's
/// shutdown stopped is asked again (`NeedBook.Outcome.askAgain`): that need only, the runs it
/// waited for otherwise kept.
extension FleetCoordinator {
    /// Asks the needs of `runs` (a tick's read of `unasked`, begun at `readAt`, each with the
    /// definition it was triggered with: `lookUp`), each once at a time: first forgets the runs
    /// whose needs were written before that read (it saw them so). Posted after any earlier
    /// tick's asks, so one of those that read a run asking before its write committed finds it
    /// still remembered.
    func askNeeds(of runs: [(RunSnapshot, Action?)], readAt: ContinuousClock.Instant) {
        guard reactor.isCurrent else { return reactor.post { [self] in askNeeds(of: runs, readAt: readAt) } }
        send(.needsRead(readAt: readAt))
        for (run, definition) in runs { send(.askNeeds(run, definition: definition)) }
    }

    /// The state's `askNeeds` (once at a time per run: the feed finds it again on each tick until
    /// written): asks them now, on the loop, those of `definition` (the action as the run was
    /// triggered, as one machine's run keeps its own: a reload since changes none of them).
    func askingNeeds(of run: RunSnapshot, _ definition: Action?) {
        // No definition here (its action gone from the config, or refused): nothing to ask; its start cancels or ends it.
        guard let definition else { return writeNeeds(of: run.id, nil, [], failure: nil) }
        askNeed(0, of: run, definition, asked: [])
    }

    private func askNeed(_ index: Int, of run: RunSnapshot, _ action: Action, asked: [NeededRun]) {
        guard index < action.needs.count else { return writeNeeds(of: run.id, action, asked, failure: nil) }
        let need = action.needs[index]
        let target = need.action
        // Asked again (`NeedBook.Outcome.askAgain`): a need whose run a shutdown did not stop keeps it.
        if let kept = run.needs?.dropFirst(index).first, kept.action == target.name, !kept.stoppedByShutdown {
            return askNeed(index + 1, of: run, action, asked: asked + [kept])
        }
        let params: [String: String]
        do { params = try need.params(for: run.params) } catch {
            return writeNeeds(of: run.id, action, asked, failure: "needs \(target.name): \(error.message(at: .now))")
        }
        let via = "needed by \(action.name) run \(run.id)"
        var asking = Trigger(action: target, key: target.key(for: params), policy: .join, params: params, peer: run.trigger, via: via)
        // Its origin (who may not approve it) is the one the needing run passes on (`FleetJournal.Origin`).
        asking.neededBy = run.id
        trigger(asking, follower: nil) { [self] result in
            switch result {
            case let .success((decision, needed)):
                // Inside its cooldown the key's last success serves: the need is met.
                let phase: Phase = if case .cooled = decision { .success } else { needed.phase }
                let known = NeededRun(action: target.name, run: needed.id, phase: phase, reason: phase.isTerminal ? needed.reason : nil)
                reactor.onLoop { [self] in askNeed(index + 1, of: run, action, asked: asked + [known]) }
            case let .failure(error) where Self.passing(error):
                log("the needs of run \(run.id) are asked again: \(target.name) could not be triggered now: \(error)")
                reactor.onLoop { [self] in send(.needsNotAsked(run.id)) }
            case let .failure(error):
                writeNeeds(of: run.id, action, asked, failure: "needs \(target.name): \(error.message(at: .now))")
            }
        }
    }

    /// Whether a need's trigger failed for a reason that passes (the store, a shutdown), not a
    /// decision refusing it (paused, rate limited, a param refused): the run is asked again.
    static func passing(_ error: BatonError) -> Bool {
        switch error {
        case .storeUnavailable, .shuttingDown, .stopped, .historyUnreadable, .internalError: true
        default: false
        }
    }

    private func writeNeeds(of id: Int64, _ action: Action?, _ needed: [NeededRun], failure: String?) {
        let me = host
        pool.submit({ db in
            try FleetNeeds.write(id, needed: needed, failure: failure, on: db, as: me, action: failure == nil ? nil : action)
        }) { [self] result in
            if case let .failure(error) = result {
                log("the needs of run \(id) could not be written: \(error)")
                return reactor.onLoop { [self] in send(.needsNotAsked(id)) }
            }
            // When it committed, read here: a tick whose read began after this saw it written.
            let at = ContinuousClock.now
            reactor.onLoop { [self] in send(.needsWritten(id, at: at)) }
        }
    }
}

/// The runs a host asks the needs of (`FleetCoordinator.askNeeds`): one asked at a time; one
/// whose needs were written is kept until a tick's read of the rows begun after the write
/// (`prune`), so that a tick that read it `asking` before the write committed does not ask again.
struct NeedsAsked: Sendable {
    /// Each run asked: nil while it is asked, then when its write ended.
    private var runs: [Int64: ContinuousClock.Instant?] = [:]

    /// Whether run `id` may be asked now (it is then remembered).
    mutating func begin(_ id: Int64) -> Bool {
        guard !runs.keys.contains(id) else { return false }
        runs[id] = .some(nil)
        return true
    }

    mutating func written(_ id: Int64, at now: ContinuousClock.Instant) {
        if runs.keys.contains(id) { runs[id] = .some(now) }
    }

    /// Run `id` may be asked again at once (its asking failed, nothing was written).
    mutating func forget(_ id: Int64) { runs[id] = nil }

    mutating func prune(writtenBefore read: ContinuousClock.Instant) {
        runs = runs.filter { _, written in written.map { $0 >= read } ?? true }
    }

    var count: Int { runs.count }
}
