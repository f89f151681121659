@testable import BatonCore
@testable import BatonEngine
import Testing

/// Each attempt's job says where its output begins in the run's (`Job.outputBefore`): what the
/// attempts before it wrote. A shim's spool told at a hand-over is marked with it, so that it is
/// told once (review s37 N3).
@Suite("Conductor: where an attempt's output begins")
struct ConductorOutputBeforeTests {
    /// Writes `output` and fails once `gate` is open, recording the job's `outputBefore`.
    struct Writing: Runner {
        let seen: Recorder<Int64>
        let output: [UInt8]
        let gate: Gate
        func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
            seen.append(job.outputBefore)
            events(.started(nil))
            Task { [output, gate] in
                await gate.wait()
                events(.output(.stdout, output))
                events(.ended(AttemptOutcome(result: .exited(status: 1, lastErrorLine: nil))))
            }
            return Finished()
        }
    }

    final class Finished: Attempt {
        func stop(grace: Duration) {}
    }

    @Test("three attempts of a run that writes 5 bytes each: they begin at 0, 5 and 10")
    func outputBefore() async throws {
        let conductor = Conductor(actions: [], store: MemoryStore())
        let seen = Recorder<Int64>(), gate = Gate()
        var action = Action(name: "r", exec: ["x"])
        action.retry = RetryPolicy(attempts: 2, backoff: .milliseconds(1))  // two retries: three attempts
        conductor.shared.withLock { registry in
            registry.actions["r"] = action
            registry.closures["r"] = RunnerBox(Writing(seen: seen, output: Array("12345".utf8), gate: gate))
            registry.loaded += 1
        }
        let ticket = try await conductor.trigger(TriggerRequest(action: "r", wait: false))
        // In flight until the gate opens: its updates are followed from its first attempt.
        let updates = try #require(await conductor.attach(ticket.run.id))
        gate.open()
        var final: RunSnapshot?
        for await update in updates { final = update.run }
        #expect(final?.phase == .failure && final?.attempts == 3)
        #expect(seen.all == [0, 5, 10])
    }
}
