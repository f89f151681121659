@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Conductor single flight")
struct ConductorTests {
    @Test("reject: 50 concurrent triggers give exactly 1 run and 49 busy")
    func rejectStorm() async throws {
        let gate = Gate(), starts = Counter()
        let conductor = await gated(Action(name: "slow", policy: .reject), gate: gate, starts: starts)
        let results = await withTaskGroup(of: Result<Ticket, BatonError>.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { return .success(try await conductor.trigger(TriggerRequest(action: "slow", wait: false))) }
                    catch let error as BatonError { return .failure(error) } catch { return .failure(.internalError("\(error)")) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let accepted = results.compactMap { try? $0.get() }
        let busy = results.filter { if case .failure(.busy) = $0 { true } else { false } }
        #expect(accepted.count == 1)
        #expect(busy.count == 49)
        let runID = accepted[0].run.id
        for case let .failure(.busy(run, _, _, _, _)) in results { #expect(run == runID) }
        gate.open()
        let updates = try #require(await conductor.attach(runID))
        var final: RunSnapshot?
        for await update in updates { final = update.run }
        #expect(final?.phase == .success)
        #expect(starts.count == 1)
    }

    @Test("join: 50 concurrent triggers give exactly 1 run and 50 callers with its outcome")
    func joinStorm() async throws {
        let gate = Gate(), starts = Counter()
        let store = MemoryStore()
        let conductor = await gated(Action(name: "slow", policy: .join), gate: gate, starts: starts, store: store)
        let tickets = try await withThrowingTaskGroup(of: Ticket.self) { group in
            for _ in 0..<50 { group.addTask { try await conductor.trigger(TriggerRequest(action: "slow")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(tickets.map(\.run.id)).count == 1)
        #expect(tickets.filter { !$0.shared }.count == 1)
        gate.open()
        let outcomes = await withTaskGroup(of: RunSnapshot?.self) { group in
            for ticket in tickets { group.addTask { await ticket.outcome() } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 50)
        #expect(outcomes.allSatisfy { $0?.phase == .success })
        #expect(starts.count == 1)
        let joins = store.entries.filter { if case let .trigger(record) = $0 { record.decision == .joined } else { false } }
        #expect(joins.count == 49)
    }

    @Test("queue: a storm while a run loads gives one follow-up that starts after it")
    func queueStorm() async throws {
        let gate = Gate(), starts = Counter()
        let conductor = await gated(Action(name: "slow", policy: .queue), gate: gate, starts: starts)
        let first = try await conductor.trigger(TriggerRequest(action: "slow"))
        await untilLoading(first)
        let tickets = try await withThrowingTaskGroup(of: Ticket.self) { group in
            for _ in 0..<20 { group.addTask { try await conductor.trigger(TriggerRequest(action: "slow", wait: false)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let followUps = Set(tickets.map(\.run.id))
        #expect(followUps.count == 1)
        #expect(!followUps.contains(first.run.id))
        #expect(tickets.filter { if case .followUp = $0.decision { true } else { false } }.count == 1)
        #expect(tickets.filter { if case .coalesced = $0.decision { true } else { false } }.count == 19)
        gate.open()
        _ = await first.outcome()
        // The follow-up may have ended already (it starts as soon as the first run's processes are gone).
        if let follow = await conductor.attach(followUps.first!) { for await _ in follow {} }
        #expect(starts.count == 2)
    }

    @Test("replace: the running run is cancelled, recorded as replaced, and the new one runs after it")
    func replace() async throws {
        let store = MemoryStore()
        let conductor = Conductor(actions: [], store: store)
        let starts = Counter()
        conductor.register(Action(name: "slow", policy: .replace)) { _ in
            starts.increment()
            try await Task.sleep(for: .seconds(300))
        }
        let first = try await conductor.trigger(TriggerRequest(action: "slow"))
        await untilLoading(first)
        let second = try await conductor.trigger(TriggerRequest(action: "slow", wait: true))
        guard case .replaced(_, let stopping) = second.decision else { Issue.record("expected replaced"); return }
        #expect(stopping == [first.run.id])
        let old = await first.outcome()
        #expect(old?.phase == .cancelled)
        #expect(old?.reason == "replaced")
        #expect(old?.error == "replaced by run \(second.run.id)")
        await untilLoading(second)
        _ = try await conductor.cancel(run: second.run.id, by: Peer(uid: 7, gid: 7, pid: 1))
        let new = await second.outcome()
        #expect(new?.phase == .cancelled)
        #expect(starts.count == 2)
        let last = store.transitions.last { $0.runID == second.run.id }
        #expect(last?.detail.by == 7)
    }

    @Test("two keys of one action run side by side; the same key does not")
    func keysSideBySide() async throws {
        let gate = Gate(), starts = Counter()
        let deploy = Action(name: "deploy", policy: .reject, params: ["env": ParamSpec()], keyParams: ["env"])
        let conductor = await gated(deploy, gate: gate, starts: starts)
        let prod = try await conductor.trigger(TriggerRequest(action: "deploy", params: ["env": "prod"]))
        let staging = try await conductor.trigger(TriggerRequest(action: "deploy", params: ["env": "staging"]))
        await untilLoading(prod)
        await untilLoading(staging)
        await #expect(throws: BatonError.self) { try await conductor.trigger(TriggerRequest(action: "deploy", params: ["env": "prod"])) }
        gate.open()
        #expect(await prod.outcome()?.phase == .success)
        #expect(await staging.outcome()?.phase == .success)
        #expect(starts.count == 2)
    }

    @Test("every recorded history is a legal path with contiguous sequence numbers")
    func legalPaths() async throws {
        let store = MemoryStore()
        let conductor = Conductor(actions: [], store: store)
        let attempts = Counter()
        conductor.register(Action(name: "flaky", retry: RetryPolicy(attempts: 2, backoff: .milliseconds(1)))) { _ in
            attempts.increment()
            if attempts.count < 3 { struct Boom: Error {}; throw Boom() }
        }
        let ticket = try await conductor.trigger(TriggerRequest(action: "flaky"))
        let outcome = await ticket.outcome()
        #expect(outcome?.phase == .success)
        #expect(outcome?.attempts == 3)
        let path = store.transitions.filter { $0.runID == ticket.run.id }
        #expect(path.map(\.seq) == Array(1...path.count))
        #expect(path.map(\.to) == [.queued, .loading, .retrying, .loading, .retrying, .loading, .success])
        for transition in path { #expect(Phase.allows(from: transition.from, to: transition.to)) }
    }

    @Test("unknown actions, bad params and disallowed policies are refused with what was wrong")
    func refusals() async {
        let conductor = Conductor(actions: [Action(name: "a", exec: ["true"], policy: .reject, policies: [.join])])
        await #expect(throws: BatonError.unknownAction("b")) { try await conductor.trigger(TriggerRequest(action: "b")) }
        await #expect(throws: BatonError.badRequest("action a does not allow policy replace (allowed: reject, join)")) {
            try await conductor.trigger(TriggerRequest(action: "a", policy: .replace))
        }
        await #expect(throws: BatonError.badParam(name: "x", message: "action a takes no params, got x")) {
            try await conductor.trigger(TriggerRequest(action: "a", params: ["x": "1"]))
        }
    }
}
