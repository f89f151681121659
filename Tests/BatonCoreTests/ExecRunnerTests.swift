@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

@Suite("Exec runner")
struct ExecRunnerTests {
    func run(_ exec: [String], env: [String: String] = [:], params: [String: String] = [:]) async -> AttemptOutcome {
        let job = Job(runID: 1, action: Action(name: "t", exec: exec, env: env), attempt: 1, params: params)
        return await AttemptProbe(ExecRunner(), job).outcome()
    }

    @Test("an attempt ends only when its whole group is gone: a child that ignores SIGTERM is killed after killGrace")
    func groupOutlivesLeader() async throws {
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sh", "-c", "trap '' TERM; sleep 300 & echo $! > \"$PIDFILE\"; exit 0"],
                                               env: ["PIDFILE": NSTemporaryDirectory() + "baton-child-\(getpid())"],
                                               killGrace: .milliseconds(100)), attempt: 1, params: [:])
        let probe = AttemptProbe(ExecRunner(), job)
        let group = try #require(await probe.started())
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded)
        #expect(outcome.result.leftovers == 1)
        // Gone, or a zombie: this test runner is no subreaper, so init reaps it when it gets to it.
        #expect(group.survivors().isEmpty)
        let child = try String(contentsOfFile: NSTemporaryDirectory() + "baton-child-\(getpid())", encoding: .utf8)
        #expect(ProcStat(pid: Int32(child.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)?.isZombie ?? true)
    }

    /// Found by the slow-watchers test: a leader that exited at once was reaped by the orphan
    /// sweep before its attempt knew it, and the run stayed loading for ever (and so did shutdown).
    @Test("the orphan sweep at the worst moment (leader exited, attempt not yet watching) leaves the leader's status to its attempt")
    func sweepRightAfterSpawn() async {
        var runner = ExecRunner()
        let swept = Recorder<Bool>()
        runner.afterSpawn = { pid in
            var info = siginfo_t()
            _ = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            swept.append(ProcessAttempt.reapIfOrphan(pid))
        }
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sh", "-c", "exit 7"]), attempt: 1, params: [:])
        let outcome = await AttemptProbe(runner, job).outcome()
        #expect(swept.all == [false])
        #expect(outcome.result.error == "exited with status 7")
    }

    @Test("exit 0 is success and the output is captured")
    func success() async {
        let outcome = await run(["sh", "-c", "echo out; echo err >&2"])
        #expect(outcome.result.succeeded)
        #expect(String(decoding: outcome.output, as: UTF8.self).contains("out"))
        #expect(String(decoding: outcome.output, as: UTF8.self).contains("err"))
    }

    @Test("a non-zero exit names the status and the last stderr line")
    func failure() async {
        let outcome = await run(["sh", "-c", "echo first >&2; echo 'disk full' >&2; exit 3"])
        #expect(!outcome.result.succeeded)
        #expect(outcome.result.error == "exited with status 3: disk full")
        #expect(outcome.result.exitCode == 3)
    }

    @Test("death by signal names the signal")
    func signal() async {
        let outcome = await run(["sh", "-c", "kill -9 $$"])
        #expect(outcome.result.error == "killed by signal 9")
    }

    @Test("a missing program fails to start with a clear message")
    func missing() async {
        let outcome = await run(["/nonexistent/program"])
        #expect(!outcome.result.started)
        #expect(outcome.result.error == "cannot run /nonexistent/program: No such file or directory")
    }

    @Test("params arrive in the environment only, never through a shell")
    func params() async {
        let outcome = await run(["sh", "-c", "printf '%s' \"$BATON_PARAM_ENV\""], params: ["env": "$(touch /tmp/baton-pwned); `id`"])
        #expect(String(decoding: outcome.output, as: UTF8.self) == "$(touch /tmp/baton-pwned); `id`")
        #expect(!FileManager.default.fileExists(atPath: "/tmp/baton-pwned"))
    }

    @Test("the output tail is bounded")
    func tail() async {
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sh", "-c", "head -c 300000 /dev/zero"]), attempt: 1, params: [:])
        let outcome = await AttemptProbe(ExecRunner(tailLimit: 1_000), job).outcome()
        #expect(outcome.output.count == 1_000)
        #expect(outcome.truncated)
    }

    @Test("SIGTERM to the group stops grandchildren too")
    func grandchildren() async throws {
        let marker = "baton-test-\(UInt32.random(in: 0...UInt32.max))"
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sh", "-c", "sleep 300 & sleep 300; : \(marker)"]), attempt: 1, params: [:])
        let probe = AttemptProbe(ExecRunner(), job)
        let group = try #require(await probe.started())
        // The group has the shell and its two sleeps once both have started.
        while group.survivors().count < 3 { await Task.yield() }
        probe.attempt.stop(grace: .seconds(5))
        let outcome = await probe.outcome()
        #expect(outcome.result.signal == SIGTERM)
        // The attempt ends only once its whole group is gone.
        #expect(group.survivors().isEmpty)
    }

    @Test("progress written to BATON_PROGRESS_FD is reported")
    func progress() async {
        let job = Job(runID: 1, action: Action(name: "t", exec: ["sh", "-c", "echo '1/4 one' >&$BATON_PROGRESS_FD; echo '50% half' >&3"]),
                      attempt: 1, params: [:])
        let probe = AttemptProbe(ExecRunner(), job)
        _ = await probe.outcome()
        #expect(probe.progress.map(\.fraction) == [0.25, 0.5])
        #expect(probe.progress.map(\.message) == ["one", "half"])
    }
}
