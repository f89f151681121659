@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

@Suite("Conductor cancel, timeout and limits")
struct ConductorStopTests {
    @Test("cancel of a loading exec run kills its whole process group, grandchildren too")
    func cancelLoading() async throws {
        let marker = "baton-cancel-\(UInt32.random(in: 0...UInt32.max))"
        let store = MemoryStore()
        let conductor = Conductor(actions: [Action(name: "sleepy", exec: ["sh", "-c", "sleep 300 & sleep 300; : \(marker)"], killGrace: .seconds(2))], store: store)
        let ticket = try await conductor.trigger(TriggerRequest(action: "sleepy"))
        await untilLoading(ticket)
        let pgid = try await waitForProcessGroup(store, run: ticket.run.id)
        _ = try await conductor.cancel(run: ticket.run.id, by: Peer(uid: 42, gid: 42, pid: 1))
        let outcome = await ticket.outcome()
        #expect(outcome?.phase == .cancelled)
        #expect(store.transitions.last?.detail.by == 42)
        // An attempt ends only once its whole group is gone: no waiting here.
        #expect(pgid.survivors().isEmpty)
    }

    @Test("stopRemaining before shutdown has begun (a second signal first) still stops the runs in flight")
    func stopRemainingFirst() async throws {
        let conductor = Conductor(actions: [Action(name: "long", exec: ["sleep", "300"])])
        let ticket = try await conductor.trigger(TriggerRequest(action: "long"))
        await untilLoading(ticket)
        conductor.stopRemaining()
        let outcome = await ticket.outcome()
        #expect(outcome?.phase == .cancelled && outcome?.reason == "shutdown", "\(String(describing: outcome))")
        await conductor.shutdown(grace: .seconds(3_600))
    }

    @Test("shutdown with a grace of 0 stops the runs in flight: the grace never fires before the shutdown is in (it was ignored, and batond hung)")
    func zeroGrace() async throws {
        for _ in 0..<40 {
            let conductor = Conductor(actions: [Action(name: "long", exec: ["sleep", "300"], killGrace: .milliseconds(100))])
            let ticket = try await conductor.trigger(TriggerRequest(action: "long"))
            await untilLoading(ticket)
            // A deadline, not a speed: the bug left the run loading for its whole 300 s.
            let stopped = await withTaskGroup(of: Bool.self) { group in
                group.addTask { await conductor.shutdown(grace: .zero); return true }
                group.addTask { try? await Task.sleep(for: .seconds(30)); return false }
                let first = await group.next() ?? false
                if !first { conductor.stopRemaining() }
                group.cancelAll()
                return first
            }
            #expect(stopped, "shutdown(grace: 0) did not stop the run in flight")
            let outcome = await ticket.outcome()
            #expect(outcome?.reason == "shutdown", "\(String(describing: outcome))")
            guard stopped else { return }
        }
    }

    @Test("cancel of a queued run drops it without starting it")
    func cancelQueued() async throws {
        let gate = Gate(), starts = Counter()
        let conductor = Conductor(actions: [], store: MemoryStore(), options: .init(maxConcurrentRuns: 1))
        conductor.register(Action(name: "a")) { _ in starts.increment(); await gate.wait() }
        conductor.register(Action(name: "b")) { _ in starts.increment() }
        let first = try await conductor.trigger(TriggerRequest(action: "a"))
        await untilLoading(first)
        let second = try await conductor.trigger(TriggerRequest(action: "b"))
        #expect(second.run.phase == .queued)
        _ = try await conductor.cancel(run: second.run.id, by: nil)
        #expect(await second.outcome()?.phase == .cancelled)
        gate.open()
        #expect(await first.outcome()?.phase == .success)
        #expect(starts.count == 1)
    }

    @Test("timeout kills a running process: failure, reason timeout")
    func timeout() async throws {
        let conductor = Conductor(actions: [Action(name: "hang", exec: ["sleep", "300"], timeout: .milliseconds(200))])
        let outcome = await (try await conductor.trigger(TriggerRequest(action: "hang"))).outcome()
        #expect(outcome?.phase == .failure)
        #expect(outcome?.reason == "timeout")
        #expect(outcome?.error == "timed out after 200ms")
    }

    @Test("timeout during a retry backoff ends the run at once")
    func timeoutInBackoff() async throws {
        let store = MemoryStore()
        // The timeout must fall in the backoff, not the first attempt: 2 s leaves room for a slow
        // spawn of `false` on a loaded machine (at 300 ms one in-process run timed out the attempt).
        let conductor = Conductor(actions: [Action(name: "fail", exec: ["false"], timeout: .seconds(2),
                                                   retry: RetryPolicy(attempts: 5, backoff: .seconds(60)))], store: store)
        let ticket = try await conductor.trigger(TriggerRequest(action: "fail"))
        let outcome = await ticket.outcome()
        #expect(outcome?.phase == .failure)
        #expect(outcome?.reason == "timeout")
        #expect(store.transitions.filter { $0.runID == ticket.run.id }.map(\.to) == [.queued, .loading, .retrying, .failure])
    }

    @Test("cancel during retrying ends the run at once, recording who cancelled")
    func cancelInBackoff() async throws {
        let store = MemoryStore()
        // An hour's backoff: the cancel must land during it however slowly this test is scheduled.
        let conductor = Conductor(actions: [Action(name: "fail", exec: ["false"],
                                                   retry: RetryPolicy(attempts: 5, backoff: .seconds(3_600), maxBackoff: .seconds(3_600)))], store: store)
        let ticket = try await conductor.trigger(TriggerRequest(action: "fail"))
        guard let updates = ticket.updates else { Issue.record("no updates"); return }
        // Once: more than one update may show the run retrying before the cancel lands.
        for await update in updates where update.run.phase == .retrying {
            try await conductor.cancel(run: ticket.run.id, by: Peer(uid: 1234, gid: 1, pid: 1))
            break
        }
        #expect(await ticket.outcome()?.phase == .cancelled)
        let transitions = store.transitions.filter { $0.runID == ticket.run.id }
        #expect(transitions.map(\.to) == [.queued, .loading, .retrying, .cancelled])
        #expect(transitions.last?.detail.by == 1234)
        #expect(transitions[2].detail.error == "exited with status 1")
    }

    @Test("replace while a follow-up is queued cancels both, and only the new run starts")
    func replaceWithFollowUp() async throws {
        let gate = Gate(), starts = Counter()
        let conductor = Conductor(actions: [], store: MemoryStore())
        conductor.register(Action(name: "k", policy: .queue, policies: [.replace])) { _ in
            starts.increment()
            await gate.wait()
            try Task.checkCancellation()
        }
        let running = try await conductor.trigger(TriggerRequest(action: "k"))
        await untilLoading(running)
        let followUp = try await conductor.trigger(TriggerRequest(action: "k"))
        let replacing = try await conductor.trigger(TriggerRequest(action: "k", policy: .replace))
        guard case let .replaced(id, stopping) = replacing.decision else { Issue.record("expected replaced"); return }
        #expect(stopping == [running.run.id, followUp.run.id])
        #expect(await followUp.outcome()?.phase == .cancelled)
        gate.open()
        #expect(await running.outcome()?.reason == "replaced")
        #expect(await replacing.outcome()?.phase == .success)
        #expect(id == replacing.run.id)
        #expect(starts.count == 2)
    }

    @Test("the concurrency limit keeps runs queued and starts them first in first out")
    func fifo() async throws {
        let gate = Gate()
        let order = Recorder<String>()
        let conductor = Conductor(actions: [], store: MemoryStore(), options: .init(maxConcurrentRuns: 1))
        for name in ["a", "b", "c", "d"] {
            conductor.register(Action(name: name)) { _ in order.append(name); await gate.wait() }
        }
        let first = try await conductor.trigger(TriggerRequest(action: "a"))
        await untilLoading(first)
        var tickets: [Ticket] = []
        for name in ["b", "c", "d"] { tickets.append(try await conductor.trigger(TriggerRequest(action: name))) }
        gate.open()
        for ticket in tickets { _ = await ticket.outcome() }
        #expect(order.all == ["a", "b", "c", "d"])
    }

    /// (The deadline is a safety net, not a timing claim: with the e2e tests blocking the two
    /// cooperative threads, async tests here can stall for seconds.)
    func waitForProcessGroup(_ store: MemoryStore, run: Int64) async throws -> ProcessGroup {
        func groups() -> [ProcessGroup] {
            store.entries.compactMap { entry in
                guard case let .processGroup(id, pgid, identity) = entry, id == run else { return nil }
                return ProcessGroup(pgid: pgid, identity: identity)
            }
        }
        var found: ProcessGroup?
        await Eventually.untilAwaited("""
            run \(run)'s group with 3 live processes: \(groups().map { "pgid \($0.pgid) (\($0.identity)) survivors \($0.survivors())" }), \
            phases \(store.transitions.filter { $0.runID == run }.map(\.to))
            """, within: 300) {
            found = groups().first { $0.survivors().count >= 3 }
            return found != nil
        }
        guard let found else { throw CancellationError() }
        return found
    }
}
