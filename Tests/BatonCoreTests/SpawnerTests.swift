@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import CBatonSystem
import Dispatch
import Foundation
import Testing

/// Spawning off the loop: the spawner threads make the leaders in parallel while the loop goes on,
/// a stop asked before the birth reaches the leader when it is born, and clone3 puts the child in
/// its cgroup before it runs. Serialized: two tests turn clone3 off for the process.
@Suite("Spawner", .serialized, .offPool)
struct SpawnerTests {
    /// A runner whose spawner threads each wait at `gate` before making anything, telling `arrived` first.
    static func gated(threads: Int, reactor: Reactor, arrived: DispatchSemaphore, gate: DispatchSemaphore) -> ExecRunner {
        var runner = ExecRunner(reactor: reactor)
        runner.spawner = SpawnerPool(threads: threads)
        runner.onSpawner = {
            arrived.signal()
            gate.wait()
        }
        return runner
    }

    @Test("two spawns are made at once on two spawner threads, and the loop answers while both are held")
    func parallel() async {
        let reactor = Reactor()
        let (arrived, gate) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let runner = Self.gated(threads: 2, reactor: reactor, arrived: arrived, gate: gate)
        let jobs = (1...2).map { Job(runID: Int64($0), action: Action(name: "t", exec: ["sh", "-c", "exit 0"]), attempt: 1, params: [:]) }
        let probes = jobs.map { AttemptProbe(runner, $0) }
        // Both inside a spawner at the same time: neither was let go yet.
        #expect(arrived.wait(timeout: .usualWait) == .success)
        #expect(arrived.wait(timeout: .usualWait) == .success)
        let answered = DispatchSemaphore(value: 0)
        reactor.post { answered.signal() }
        #expect(answered.wait(timeout: .usualWait) == .success, "the loop is not held by the spawns")
        #expect(probes.allSatisfy { $0.events.all.isEmpty }, "nothing is told before the spawn")
        gate.signal()
        gate.signal()
        for probe in probes {
            let outcome = await probe.outcome()
            #expect(outcome.result.succeeded)
            #expect(probe.group != nil)
        }
    }

    @Test("a stop asked while the leader is being spawned reaches it the moment it is born (SIGTERM), not its end")
    func stopWhileSpawning() async throws {
        let reactor = Reactor()
        let (arrived, gate) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let runner = Self.gated(threads: 1, reactor: reactor, arrived: arrived, gate: gate)
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sleep", "300"], killGrace: .seconds(30)), attempt: 1, params: [:])
        let probe = AttemptProbe(runner, job)
        #expect(arrived.wait(timeout: .usualWait) == .success)
        probe.attempt.stop(grace: .seconds(30))
        // The stop is the machine's before the spawner goes on.
        let attempt = try #require(probe.attempt as? ProcessAttempt)
        while await Self.onLoop(reactor, { attempt.state.access { $0.machine.stopAtBirth == nil } }) {
            await Task.yield()
        }
        gate.signal()
        let outcome = await probe.outcome()
        #expect(outcome.result.error == "killed by signal 15")
        #expect(probe.group != nil)
    }

    @Test("a spawn that fails on the spawner thread ends the attempt unstarted, saying why")
    func failsOffTheLoop() async {
        var runner = ExecRunner(reactor: Reactor())
        runner.spawner = SpawnerPool(threads: 1)
        let job = Job(runID: 1, action: Action(name: "t", exec: ["/nonexistent/program"]), attempt: 1, params: [:])
        let probe = AttemptProbe(runner, job)
        let outcome = await probe.outcome()
        #expect(!outcome.result.started)
        #expect(outcome.result.error == "cannot run /nonexistent/program: No such file or directory")
        #expect(probe.events.all.first == .started(nil))
    }

    @Test("clone3 puts the child in its cgroup as it is born, with a pidfd; turned off, the spawn says to go the other way", arguments: [true, false])
    func clone3IntoCgroup(_ enabled: Bool) throws {
        guard case let .success(hierarchy) = CgroupHierarchy.prepare(instance: "spawner-test-\(UUID().uuidString)") else { return }
        defer { hierarchy.removeSubtrees() }
        let cgroup = try AttemptCgroup.create(hierarchy.path(run: 1, attempt: 1), home: hierarchy.home).get()
        defer { cgroup.remove() }
        let was = baton_spawn_clone3_enable(enabled ? 1 : 0)
        defer { baton_spawn_clone3_enable(was) }
        var pid: pid_t = 0, pidfd: Int32 = -1
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let rc = withCStrings(["sleep", "30"]) { argv in
            withCStrings(["PATH=/usr/bin:/bin"]) { envp in
                baton_spawn_clone3(argv, envp, nil, null, null, -1, cgroup.directory, nil, 0, 0, 0, 0, nil, 0, 0, 0, &pid, &pidfd)
            }
        }
        cgroup.closeProcs()
        guard enabled else {
            #expect(rc == -1)
            return
        }
        #expect(rc == 0)
        #expect(pidfd >= 0)
        #expect(cgroup.members() == [pid])
        // Its own process group, as the other spawns give it.
        #expect(getpgid(pid) == pid)
        kill(pid, SIGKILL)
        var info = siginfo_t()
        _ = waitid(P_PID, id_t(pid), &info, WEXITED)
        close(pidfd)
    }

    @Test("a run's leader is in its attempt's cgroup before it runs, by clone3 and by the fallback (vfork, the child writing cgroup.procs)",
          arguments: [true, false])
    func runInCgroup(_ clone3: Bool) async throws {
        guard case let .success(hierarchy) = CgroupHierarchy.prepare(instance: "spawner-run-\(UUID().uuidString)") else { return }
        defer {
            hierarchy.removeAll()
            hierarchy.removeSubtrees()
        }
        var runner = ExecRunner(reactor: Reactor())
        runner.tracking = .cgroup(hierarchy)
        let was = baton_spawn_clone3_enable(clone3 ? 1 : 0)
        defer { baton_spawn_clone3_enable(was) }
        let job = Job(runID: clone3 ? 31 : 32, action: Action(name: "t", exec: ["sh", "-c", "exec cat /proc/self/cgroup"]), attempt: 1, params: [:])
        let outcome = await AttemptProbe(runner, job).outcome()
        #expect(outcome.result.succeeded)
        let line = String(decoding: outcome.output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("0::") } ?? ""
        #expect(line.hasSuffix("/run-\(job.runID)-1"), "\(line)")
        #expect(access(hierarchy.path(run: job.runID, attempt: 1), F_OK) != 0, "the cgroup is removed at the end")
    }

    @Test("the leader book with several spawners: any spawn under way holds the orphan sweep off; a fenced host begins none")
    func leaderBook() {
        var book = LeaderBook()
        let began = [book.beginSpawn(), book.beginSpawn()]
        #expect(began == [true, true])
        book.endSpawn(100)
        #expect(!book.mayReap(200), "the other spawn's leader may be 200")
        #expect(!book.mayReap(100), "a leader is its attempt's to reap")
        book.endSpawn(nil)
        #expect(book.mayReap(200) && !book.mayReap(100))
        book.refuseSpawns()
        let refused = !book.beginSpawn()
        #expect(refused)
        #expect(book.spawning == 0 && book.mayReap(200))
    }

    static func onLoop<T: Sendable>(_ reactor: Reactor, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in reactor.post { done.resume(returning: body()) } }
    }

    @Test("no process-wide pool: a runner has the spawner it is given (the daemon's), or one of its own")
    func spawnerPassedDown() {
        let daemons = SpawnerPool(threads: 2)
        #expect(ExecRunner(spawner: daemons).spawner === daemons)
        #expect(ExecRunner().spawner !== ExecRunner().spawner)
        #expect((2...8).contains(SpawnerPool.perCore))
    }
}
