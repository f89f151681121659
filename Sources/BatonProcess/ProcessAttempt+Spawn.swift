import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ProcessAttempt {
    /// What a spawner thread made: the leader, its pidfd, its group's identity, its tree, and the
    /// read ends of its pipes.
    struct Spawned: Sendable {
        var pid: pid_t
        var pidfd: Int32
        var group: ProcessGroup
        var tree: Tree
        var pipes: AttemptOutput.Pipes
        var hookOutput: String?
        /// The attempt's shim directory, when it runs under `baton-shim`, and its directory on the disk (`-s`).
        var shimDirectory: String?
        var shimDisk: String?
        /// The attempt's artifacts directory, for an action with `artifacts`.
        var artifacts: ArtifactWork?
    }

    /// The spawner's answer, on the loop: the attempt tells its start and watches its leader, and
    /// the machine hears of the birth (a stop asked meanwhile reaches the leader now), or of the failure.
    func spawned(_ result: Result<Spawned, SpawnFailure>) {
        reactor.assertOnLoop("an attempt's spawn")
        switch result {
        case let .failure(why):
            state.access { $0.spawnFailure = why.message }
            if let done = state.access({ $0.handOverAtBirth }) { done(false) }
            handle(.spawnFailed)
        case let .success(made):
            let limit = tailLimit
            state.access { state in
                state.born = Born(pid: made.pid, tree: made.tree)
                state.pidfd = made.pidfd
                state.output = AttemptOutput(pipes: made.pipes, tailLimit: limit)
                state.hookOutput = made.hookOutput
                state.shimDirectory = made.shimDirectory
                state.shimDisk = made.shimDisk
                state.artifacts = made.artifacts
            }
            events(.started(made.group))
            begin()
            handle(.spawned)
            if let done = state.access({ $0.handOverAtBirth }) {
                state.access { $0.handOverAtBirth = nil }
                beginHandOver(done)
            }
        }
    }

    /// Starts watching: pipes and pidfd on the reactor (or, without pidfd, a check every 50 ms).
    private func begin() {
        let (pipes, pidfd) = state.access { ($0.output.pipes.open, $0.pidfd) }
        // Non-blocking already (the spawner made them so). Edge-triggered, so that each is closed
        // with no EPOLL_CTL_DEL (`Reactor.close`): the pipes' read ends and the pidfd are batond's
        // alone (close-on-exec; a child being spawned holds a copy only until its exec).
        let edge = Epoll.input | Epoll.edgeTriggered
        for fd in pipes { reactor.watch(fd, events: edge) { [self] mask in readable(fd, mask) } }
        if pidfd >= 0 {
            reactor.watch(pidfd, events: edge) { [self] _ in leaderExited() }
        } else {
            pollForExit()
        }
    }
}

/// Why a spawner could not make an attempt's leader: the attempt fails to start, saying so.
struct SpawnFailure: Error {
    var message: String
}
