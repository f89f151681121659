extension Conductor {
    /// Takes over what a previous daemon left: kills every surviving process of its unfinished
    /// runs (queued ones too: an attempt starts while its `loading` transition is being written,
    /// so a crash can leave a process of a run the history still calls queued), then ends,
    /// restarts or requeues those runs, each decision a recorded transition. Call before the
    /// first trigger.
    public func recover(_ recoverable: RecoverableState) async -> RecoverySummary {
        changeState { state in
            state.reserveIDs(from: recoverable.nextRunID)
            state.remember(pauses: recoverable.pauses)
        }
        var killed = 0
        // Nothing of this conductor runs yet: whatever its cgroups hold, a crashed daemon left.
        if let runner = options.execRunner as? ExecRunner, case let .cgroup(hierarchy) = runner.tracking {
            killed += hierarchy.removeAll()
        }
        let groups = recoverable.unfinished.compactMap { unfinished in
            unfinished.pgid.flatMap { pgid in unfinished.pgidIdentity.map { ProcessGroup(pgid: pgid, identity: $0) } }
        }
        killed += TaggedProcesses.killUntilGone(instance: options.instance, runs: Set(recoverable.unfinished.map(\.run.id)), groups: groups)
        let actions = shared.withLock { $0.actions }
        let runs = recoverable.unfinished.map { RecoveredRun($0, action: actions[$0.run.action]) }
        var summary = await withCheckedContinuation { continuation in
            ask({ .recover($0, runs) }, .recover { continuation.resume(returning: $0) })
        }
        summary.killedProcesses = killed
        return summary
    }
}
