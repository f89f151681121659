/// What recovery did with the runs a previous daemon left in flight.
public struct RecoverySummary: Sendable, Equatable {
    /// Runs that were loading or retrying and now end as `failure`, reason `interrupted`.
    public var interrupted: [Int64] = []
    /// Runs that were loading or retrying and start again (`onInterrupt: restart`).
    public var restarted: [Int64] = []
    /// Runs that were queued and are queued again, in their original order.
    public var requeued: [Int64] = []
    /// Runs that cannot go on: their action is gone from the config.
    public var dropped: [Int64] = []
    /// Processes of interrupted runs that were still alive and were killed.
    public var killedProcesses = 0

    public init() {}
}

extension Conductor {
    /// Takes over what a previous daemon left: kills the surviving processes of interrupted runs,
    /// ends or restarts those runs, and queues the queued ones again in their original order.
    /// Every decision is recorded as a transition. Call before the first trigger.
    public func recover(_ state: RecoverableState) async -> RecoverySummary {
        nextID = max(nextID, state.nextRunID)
        var summary = RecoverySummary()
        let interrupted = Set(state.unfinished.filter { $0.run.phase != .queued }.map(\.run.id))
        if let instance = options.instance {
            summary.killedProcesses += TaggedProcesses.kill(instance: instance, runs: interrupted)
        }
        for unfinished in state.unfinished {
            if let pgid = unfinished.pgid, let identity = unfinished.pgidIdentity {
                summary.killedProcesses += ProcessGroup(pgid: pgid, identity: identity).killSurvivors()
            }
            let run = unfinished.run
            guard let action = actions[run.action] else {
                await end(unfinished, .cancelled, TransitionDetail(reason: "removed", error: "action \(run.action) is no longer configured"))
                summary.dropped.append(run.id)
                continue
            }
            if run.phase == .queued {
                await requeue(unfinished, action: action, reason: "recovered")
                summary.requeued.append(run.id)
            } else if action.onInterrupt == .restart {
                await requeue(unfinished, action: action, reason: "restarted")
                summary.restarted.append(run.id)
            } else {
                await end(unfinished, .failure, TransitionDetail(reason: "interrupted", error: "batond stopped while the run was \(run.phase.rawValue)"))
                summary.interrupted.append(run.id)
            }
        }
        startAdmitted()
        return summary
    }

    private func end(_ unfinished: UnfinishedRun, _ phase: Phase, _ detail: TransitionDetail) async {
        let transition = Transition(runID: unfinished.run.id, seq: unfinished.lastSeq + 1, from: unfinished.run.phase,
                                    to: phase, at: .now, detail: detail)
        _ = await commit([.transition(transition)])
        let ended = unfinished.run.applying(transition)
        if lastEnded[ended.action].map({ $0.id < ended.id }) ?? true { lastEnded[ended.action] = ended }
    }

    private func requeue(_ unfinished: UnfinishedRun, action: Action, reason: String) async {
        let run = unfinished.run
        // Keys are recomputed: a holder and at most one follow-up per key survive; any other
        // queued run of the key would break single flight and is cancelled.
        switch table.trigger(key: run.key, policy: .queue, candidate: run.id) {
        case .created, .followUp:
            break
        default:
            await end(unfinished, .cancelled, TransitionDetail(reason: "superseded", error: "another run of key \(run.key) was already queued"))
            return
        }
        var snapshot = run
        let transition = Transition(runID: run.id, seq: unfinished.lastSeq + 1, from: run.phase, to: .queued, at: .now,
                                    detail: TransitionDetail(reason: reason))
        snapshot = snapshot.applying(transition)
        runs[run.id] = LiveRun(snapshot: snapshot, action: action, machine: RunMachine(retries: action.retry.attempts),
                               seq: transition.seq, durable: true)
        _ = await commit([.transition(transition)])
        publish(run.id, transition)
        table.markDurable(run.id)
    }
}
