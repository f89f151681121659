@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Run machine")
struct RunMachineTests {
    typealias E = RunMachine.Event

    @Test("a run that succeeds: loading is recorded before launch, success before finish")
    func success() {
        var machine = RunMachine(retries: 0)
        #expect(machine.handle(.start) == [.record(.loading, TransitionDetail(attempt: 1)), .launch(attempt: 1)])
        let effects = machine.handle(.exited(.exited(status: 0)))
        #expect(effects.count == 2)
        guard case .record(.success, let detail) = effects[0] else { Issue.record("expected success"); return }
        #expect(detail.exitCode == 0)
        #expect(effects[1] == .finish(.success))
        #expect(machine.state == .ended(.success))
    }

    @Test("a failure with retries left goes retrying, then loading with the next attempt")
    func retry() {
        var machine = RunMachine(retries: 1)
        _ = machine.handle(.start)
        let failed = machine.handle(.exited(.exited(status: 3, lastErrorLine: "boom")))
        guard case .record(.retrying, let detail) = failed.first else { Issue.record("expected retrying"); return }
        #expect(detail.error == "exited with status 3: boom")
        #expect(failed.last == .backoff(attempt: 1))
        #expect(machine.handle(.backoffElapsed) == [.record(.loading, TransitionDetail(attempt: 2)), .launch(attempt: 2)])
        let last = machine.handle(.exited(.killed(signal: 9)))
        guard case .record(.failure, let final) = last.first else { Issue.record("expected failure"); return }
        #expect(final.error == "killed by signal 9")
        #expect(final.attempt == 2)
        #expect(machine.state == .ended(.failure))
    }

    @Test("stop while loading terminates and ends in the stop's phase when the process exits",
          arguments: [(RunMachine.Stop.cancelled(by: 1000), Phase.cancelled, "cancelled"),
                      (.timeout(after: .seconds(2)), .failure, "timeout"),
                      (.replaced(by: 9), .cancelled, "replaced"),
                      (.shutdown, .cancelled, "shutdown")])
    func stopWhileLoading(stop: RunMachine.Stop, phase: Phase, reason: String) {
        var machine = RunMachine(retries: 3)
        _ = machine.handle(.start)
        #expect(machine.handle(.stop(stop)) == [.terminate])
        #expect(machine.handle(.stop(.cancelled(by: 0))) == [], "a second stop changes nothing")
        let effects = machine.handle(.exited(.killed(signal: 15)))
        guard case .record(let recorded, let detail) = effects.first else { Issue.record("expected a record"); return }
        #expect(recorded == phase)
        #expect(detail.reason == reason)
        #expect(detail.signal == 15)
        #expect(effects.last == .finish(phase))
    }

    @Test("stop while queued or retrying ends the run at once")
    func stopWithoutProcess() {
        var queued = RunMachine(retries: 0)
        #expect(queued.handle(.stop(.cancelled(by: 5))) == [.record(.cancelled, TransitionDetail(reason: "cancelled", by: 5)), .finish(.cancelled)])
        var retrying = RunMachine(retries: 2)
        _ = retrying.handle(.start)
        _ = retrying.handle(.exited(.exited(status: 1)))
        let effects = retrying.handle(.stop(.timeout(after: .seconds(1))))
        guard case .record(.failure, let detail) = effects.first else { Issue.record("expected failure"); return }
        #expect(detail.reason == "timeout")
        #expect(retrying.handle(.backoffElapsed) == [], "a backoff that fires after the end is ignored")
    }

    @Test("events that do not apply are ignored", arguments: [E.backoffElapsed, .exited(.success)])
    func ignored(event: E) {
        var machine = RunMachine(retries: 0)
        #expect(machine.handle(event) == [])
        #expect(machine.state == .queued)
    }

    @Test("a process that never started fails with reason start")
    func failedToStart() {
        var machine = RunMachine(retries: 0)
        _ = machine.handle(.start)
        let effects = machine.handle(.exited(.failedToStart("cannot run nope: No such file or directory")))
        guard case .record(.failure, let detail) = effects.first else { Issue.record("expected failure"); return }
        #expect(detail.reason == "start")
    }

    @Test("backoff doubles, is capped, and jitters within half of it")
    func backoff() {
        let retry = RetryPolicy(attempts: 5, backoff: .seconds(1), maxBackoff: .seconds(5))
        #expect(retry.delay(afterAttempt: 1, unit: 0) == .milliseconds(500))
        #expect(retry.delay(afterAttempt: 1, unit: 1) == .seconds(1))
        #expect(retry.delay(afterAttempt: 3, unit: 1) == .seconds(4))
        #expect(retry.delay(afterAttempt: 10, unit: 1) == .seconds(5))
        #expect(retry.delay(afterAttempt: 10, unit: 0) == .milliseconds(2_500))
    }
}
