import BatonEngine
import BatonProcess
import FoundationEssentials
import Glibc

extension Conductor {
    /// Takes over what a previous daemon left: the runs whose shim outlived it are adopted (in
    /// flight again, or ended from the status their shim kept: `ShimAdoption`); every other
    /// surviving process of its unfinished runs is killed (queued ones too: an attempt starts only
    /// once its `loading` is durable, but a batond from before that write-ahead start could leave a
    /// process of a run the history still calls queued), then those runs are ended, restarted or requeued, each
    /// decision a recorded transition. Call before the first trigger.
    public func recover(_ recoverable: RecoverableState) async -> RecoverySummary {
        changeState { state in
            state.reserveIDs(from: recoverable.nextRunID)
            state.remember(pauses: recoverable.pauses)
        }
        let actions = shared.withLock { $0.actions }
        let runner = options.execRunner as? ExecRunner
        let runs = recoverable.unfinished.map { unfinished in
            var recovered = RecoveredRun(unfinished, action: actions[unfinished.run.action])
            recovered.surviving = Self.surviving(recovered, shim: runner?.shim)
            return recovered
        }
        let adopted = runs.filter { $0.surviving != nil }
        var killed = 0
        // Nothing of this conductor runs yet: whatever its cgroups hold, a crashed daemon left,
        // but for the adopted attempts'.
        if let runner, case let .cgroup(hierarchy) = runner.tracking {
            let kept = Set(adopted.map { "run-\($0.unfinished.run.id)-\($0.surviving!.attempt)" })
            killed += hierarchy.removeAll(except: kept)
        }
        let spared = Set(adopted.map(\.unfinished.run.id))
        let lost = recoverable.unfinished.filter { !spared.contains($0.run.id) }
        let groups = lost.compactMap { unfinished in
            unfinished.pgid.flatMap { pgid in unfinished.pgidIdentity.map { ProcessGroup(pgid: pgid, identity: $0) } }
        }
        killed += TaggedProcesses.killUntilGone(instance: options.instance, runs: Set(lost.map(\.run.id)), groups: groups)
        if let shim = runner?.shim {
            Self.removeShimDirectories(of: shim, except: Set(adopted.flatMap { [$0.surviving?.directory, $0.surviving?.disk].compactMap { $0 } }))
        }
        // The artifacts directories a crashed batond left, but the adopted attempts' (kept at their end).
        runner?.artifacts?.removeLeft(except: Set(adopted.compactMap { run in run.surviving.map { "\(run.unfinished.run.id)-\($0.attempt)" } }))
        var summary = await withCheckedContinuation { continuation in
            ask({ .recover($0, runs) }, .recover { continuation.resume(returning: $0) })
        }
        summary.killedProcesses = killed
        return summary
    }

    /// Whether `recover` would adopt a previous daemon's unfinished run by its shim (alive, or its
    /// status kept): a fleet host takes back only those of its previous start (`FleetTakeBack`).
    public func mayAdopt(_ unfinished: UnfinishedRun) -> Bool {
        let action = shared.withLock { $0.actions[unfinished.run.action] }
        return Self.surviving(RecoveredRun(unfinished, action: action), shim: (options.execRunner as? ExecRunner)?.shim) != nil
    }

    /// The facts of one unfinished run's shim, and what `ShimAdoption` decides of them: its
    /// surviving attempt, or nil (recovered as before).
    static func surviving(_ recovered: RecoveredRun, shim: ShimSetup?) -> SurvivingAttempt? {
        let run = recovered.unfinished.run
        // The shim is the leader the history recorded: without its pid and identity, it cannot be told from a stranger.
        guard let shim, run.phase == .loading, let action = recovered.action, let pid = recovered.unfinished.pgid,
              let identity = recovered.unfinished.pgidIdentity,
              let found = latestShimDirectory(of: run.id, in: shim.places) else { return nil }
        let alive = ProcessGroup.startTime(of: pid) != nil && ProcessGroup.identity(of: pid) == identity
        let disk = shim.disk(run: run.id, attempt: found.attempt)
        let record = ShimRecord.read([found.directory, disk])
        let facts = ShimAdoption.Facts(phase: run.phase, survives: action.survivesRestart, shimDirectory: true,
                                       shimAlive: alive, statusKept: record.ended)
        switch ShimAdoption.decide(facts) {
        case .recover: return nil
        case .adopt, .collect:
            return SurvivingAttempt(attempt: found.attempt, directory: found.directory, disk: disk, pid: pid, identity: identity,
                                    alive: alive, outputTotal: recovered.unfinished.outputTotal ?? 0)
        }
    }

    /// The shim directories of runs not adopted (their processes killed above, or long ended), in
    /// every place (`ShimSetup.places`); the disk's place and the earlier runtime ones removed
    /// once empty (one that holds an adopted attempt's, at a later start).
    static func removeShimDirectories(of shim: ShimSetup, except kept: Set<String>) {
        for place in shim.places {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: place)) ?? [] where !kept.contains(place + "/" + name) {
                ShimRecord.remove(place + "/" + name)
            }
            if place != shim.directory { rmdir(place) }
        }
    }

    /// The shim directory of a run's latest attempt (`RUN-ATTEMPT`) in `places` (the first that
    /// holds that attempt's: batond's runtime place, an earlier one, the disk), if any.
    static func latestShimDirectory(of run: Int64, in places: [String]) -> (directory: String, attempt: Int)? {
        let prefix = "\(run)-"
        var latest: (directory: String, attempt: Int)?
        for place in places {
            let attempts = ((try? FileManager.default.contentsOfDirectory(atPath: place)) ?? [])
                .filter { $0.hasPrefix(prefix) }.compactMap { Int($0.dropFirst(prefix.count)) }
            if let attempt = attempts.max(), attempt > latest?.attempt ?? 0 { latest = ("\(place)/\(run)-\(attempt)", attempt) }
        }
        return latest
    }
}
