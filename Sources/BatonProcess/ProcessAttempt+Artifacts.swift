import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

extension ProcessAttempt {
    /// Off the loop, once the attempt's processes are gone: the files it left are looked at and
    /// kept (or said to be over the bound), then its directory removed; `then` after all that.
    static func keepArtifacts(_ work: ArtifactWork?, spawner: SpawnerPool, then: @escaping @Sendable () -> Void) {
        guard let work else { return then() }
        let scan = ArtifactScan.look(work.path, bound: work.bound, owner: work.owner)
        guard scan.found else { return then() }
        work.setup.keeper.keep(scan, run: work.run, attempt: work.attempt) {
            // The keeper calls back on its own thread (the history's writer): the removal goes back to a spawner.
            spawner.submit {
                ArtifactTree.remove(work.path)
                then()
            }
        }
    }
}

extension ExecRunner {
    /// The attempt's artifacts directory, made empty, for an action that keeps artifacts where
    /// the runner has a place for them; nil for the others.
    func makeArtifacts(_ job: Job) -> Result<ArtifactWork?, SpawnFailure> {
        guard let bound = job.action.artifactsKeep, let artifacts else { return .success(nil) }
        return artifacts.make(run: job.runID, attempt: job.attempt, owner: job.action.runAs).map {
            ArtifactWork(setup: artifacts, path: $0, run: job.runID, attempt: job.attempt, bound: bound, owner: Self.artifactOwner(job))
        }
    }

    /// An adopted attempt's directory (made by the batond before; its end keeps nothing when it is not there).
    func adoptedArtifacts(_ job: Job, attempt: Int) -> ArtifactWork? {
        guard let bound = job.action.artifactsKeep, let artifacts else { return nil }
        let path = artifacts.directory(run: job.runID, attempt: attempt)
        return ArtifactWork(setup: artifacts, path: path, run: job.runID, attempt: attempt, bound: bound, owner: Self.artifactOwner(job))
    }

    /// The run's user's uid where it runs as another than batond (its files must be its own), else nil.
    static func artifactOwner(_ job: Job) -> uid_t? {
        job.action.runAs.flatMap { $0.uid != geteuid() ? $0.uid : nil }
    }
}
