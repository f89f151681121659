@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("In-process actions: conductor.run with static-member options")
struct ClosureAPITests {
    @Test("100 concurrent .join calls share one run and its outcome")
    func joinStorm() async throws {
        let store = MemoryStore()
        let conductor = Conductor(actions: [], store: store)
        let gate = Gate()
        let starts = Counter()
        let ids = Recorder<Int64>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    let run = try await conductor.run("refresh-cache", .join) { _ in
                        starts.increment()
                        await gate.wait()
                    }
                    #expect(run.phase == .success)
                    ids.append(run.id)
                }
            }
            // Every caller is in: one created the run and 99 joined triggers are recorded.
            while store.entries.filter({ if case .trigger = $0 { true } else { false } }).count < 99 { await Task.yield() }
            gate.open()
            try await group.waitForAll()
        }
        #expect(starts.count == 1)
        #expect(Set(ids.all) == [1])
    }

    @Test("with .reject a second call throws busy naming the run in flight")
    func reject() async throws {
        let conductor = Conductor(actions: [])
        let gate = Gate()
        let first = Task { try await conductor.run("sync", .reject) { _ in await gate.wait() } }
        while conductor.inFlight().first?.phase != .loading { await Task.yield() }
        do {
            _ = try await conductor.run("sync", .reject) { _ in Issue.record("second body ran") }
            Issue.record("second call was not rejected")
        } catch {
            guard case let .busy(run, action, _, _, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(run == 1)
            #expect(action == "sync")
        }
        gate.open()
        #expect(try await first.value.phase == .success)
    }

    @Test(".retry(attempts:) runs the body again after it throws and ends with the last outcome")
    func retry() async throws {
        let conductor = Conductor(actions: [], options: Conductor.Options(seed: 0))
        let calls = Counter()
        struct Flaky: Error {}
        let run = try await conductor.run("flaky", .retry(attempts: 2, backoff: .milliseconds(1))) { context in
            calls.increment()
            #expect(context.attempt == calls.count)
            if calls.count < 3 { throw Flaky() }
        }
        #expect(run.phase == .success)
        #expect(run.attempts == 3)
        #expect(calls.count == 3)

        let failing = try await conductor.run("always", .retry(attempts: 1, backoff: .milliseconds(1))) { _ in throw Flaky() }
        #expect(failing.phase == .failure)
        #expect(failing.attempts == 2)
    }

    @Test(".timeout cancels the body's task and ends the run as failure, reason timeout")
    func timeout() async throws {
        let conductor = Conductor(actions: [])
        let run = try await conductor.run("stuck", .timeout(.milliseconds(20))) { _ in
            try await Task.sleep(for: .seconds(60))
        }
        #expect(run.phase == .failure)
        #expect(run.reason == "timeout")
    }

    @Test(".key(params) gives each value its own single flight; progress reaches the snapshot")
    func keysAndProgress() async throws {
        let conductor = Conductor(actions: [])
        let gate = Gate()
        let a = Task { try await conductor.run("warm", .reject, .key("region"), params: ["region": "eu"]) { context in
            context.progress(0.5, "halfway")
            await gate.wait()
        } }
        let b = Task { try await conductor.run("warm", .reject, .key("region"), params: ["region": "us"]) { _ in await gate.wait() } }
        while conductor.inFlight().filter({ $0.phase == .loading }).count < 2 { await Task.yield() }
        let keys = conductor.inFlight().map(\.key)
        #expect(Set(keys) == ["warm region=eu", "warm region=us"])
        while conductor.inFlight().first(where: { $0.params["region"] == "eu" })?.progress == nil { await Task.yield() }
        #expect(conductor.inFlight().first { $0.params["region"] == "eu" }?.progress?.message == "halfway")
        gate.open()
        #expect(try await a.value.phase == .success)
        #expect(try await b.value.phase == .success)
    }

    @Test("a configured process action cannot be taken over by run(_:)")
    func processActionIsNotReplaced() async {
        let conductor = Conductor(actions: [Action(name: "deploy", exec: ["true"])])
        await #expect(throws: BatonError.self) { try await conductor.run("deploy") { _ in } }
    }

    @Test("a new run carries the median of the action's recent successful durations as its estimate")
    func estimate() async throws {
        let conductor = Conductor(actions: [])
        conductor.remember([], durations: ["build": [1_000_000, 3_000_000, 2_000_000]])
        // Remembered on the loop, then published: read once the loop has turned.
        await conductor.ping()
        #expect(conductor.estimate(of: "build") == .seconds(2))
        conductor.register(Action(name: "build")) { _ in }
        let ticket = try await conductor.trigger(TriggerRequest(action: "build"))
        #expect(ticket.run.estimate == 2_000_000)
        _ = await ticket.outcome()
        let after = try await conductor.run("fresh") { _ in }
        #expect(after.estimate == nil)
        #expect(conductor.estimate(of: "fresh") != nil)
    }

    @Test("a reload that removes an action, or changes its exec, forgets its estimate: the action added back, or run anew, starts without one; an action kept as it was keeps its own")
    func reloadForgetsEstimates() async {
        let conductor = Conductor(actions: [Action(name: "build", exec: ["make"]), Action(name: "test", exec: ["make", "check"]),
                                            Action(name: "lint", exec: ["lint"])])
        conductor.remember([], durations: ["build": [2_000_000], "test": [3_000_000], "lint": [1_000_000]])
        conductor.replaceActions([Action(name: "test", exec: ["make", "check"]), Action(name: "lint", exec: ["lint", "--strict"])])
        conductor.replaceActions([Action(name: "build", exec: ["make"]), Action(name: "test", exec: ["make", "check"]),
                                  Action(name: "lint", exec: ["lint", "--strict"])])
        // Forgotten on the loop, after the seeds: read once the loop has turned.
        await conductor.ping()
        #expect(conductor.estimate(of: "build") == nil, "removed by a reload, added back by the next")
        #expect(conductor.estimate(of: "lint") == nil, "its exec changed")
        #expect(conductor.estimate(of: "test") == .seconds(3), "kept as it was")
    }

    @Test("an in-process action with a cooldown runs once; the next trigger is answered with that success, a forced one runs")
    func cooldown() async throws {
        let conductor = Conductor(actions: [])
        let starts = Counter()
        var action = Action(name: "warm")
        action.cooldown = .seconds(600)
        action.allowsForce = true
        conductor.register(action) { _ in starts.increment() }
        let first = try await conductor.trigger(TriggerRequest(action: "warm"))
        #expect(await first.outcome()?.phase == .success)
        let cooled = try await conductor.trigger(TriggerRequest(action: "warm"))
        #expect(cooled.decision == .cooled(first.run.id) && cooled.run.phase == .success)
        #expect(await cooled.outcome()?.id == first.run.id)
        let forced = try await conductor.trigger(TriggerRequest(action: "warm", force: true))
        #expect(forced.decision == .created(first.run.id + 1))
        _ = await forced.outcome()
        #expect(starts.count == 2)
    }
}

@Suite("Duration estimates")
struct DurationEstimateTests {
    @Test("median of odd and even counts, window of the latest 20, none before any")
    func median() {
        var estimates = DurationEstimates()
        #expect(estimates.median("a") == nil)
        estimates.record("a", micros: 5)
        #expect(estimates.median("a") == 5)
        estimates.record("a", micros: 1)
        #expect(estimates.median("a") == 3)
        estimates.record("a", micros: 100)
        #expect(estimates.median("a") == 5)
        for _ in 0..<20 { estimates.record("a", micros: 7) }
        #expect(estimates.median("a") == 7)
        estimates.record("a", micros: -1)
        #expect(estimates.median("a") == 7)
        estimates.forget("a")
        #expect(estimates.median("a") == nil)
    }

    /// 1…25 in a fixed shuffled order: a window that dropped the wrong sample (the newest, the
    /// smallest, any but the oldest) gives another median at some step.
    static let shuffled: [Int64] = [13, 2, 25, 7, 19, 1, 22, 10, 16, 4, 24, 8, 14, 21, 3, 18, 11, 6, 23, 9, 15, 20, 5, 12, 17]

    /// The median as the estimates defined it: the last 20 sorted, the middle or the mean of the two middles.
    static func reference(_ samples: ArraySlice<Int64>) -> Int64 {
        let window = samples.suffix(DurationEstimates.window).sorted()
        let middle = window.count / 2
        return window.count % 2 == 1 ? window[middle] : (window[middle - 1] + window[middle]) / 2
    }

    @Test("distinct samples: after every one, the median of the latest 20, odd and even counts; another action apart")
    func window() {
        var estimates = DurationEstimates()
        for (index, micros) in Self.shuffled.enumerated() {
            estimates.record("a", micros: micros * 10)
            estimates.record("b", micros: 1_000 - micros)
            #expect(estimates.median("a") == Self.reference(ArraySlice(Self.shuffled.prefix(index + 1).map { $0 * 10 })), "after \(index + 1)")
            #expect(estimates.median("b") == Self.reference(ArraySlice(Self.shuffled.prefix(index + 1).map { 1_000 - $0 })), "after \(index + 1)")
        }
        var odd = DurationEstimates()
        for micros in Self.shuffled.prefix(19) { odd.record("a", micros: micros) }
        // 19 samples: every value but 5, 9, 12, 15, 17 and 20; the 10th smallest.
        #expect(odd.median("a") == 13)
        // The latest 20 after 25: 2, 7, 13, 19 and 25 gone; the mean of 12 and 14.
        #expect(estimates.median("a") == 130)
        estimates.record("a", micros: 260)
        // 1 gone, 26 come: the mean of 14 and 15, tenfold.
        #expect(estimates.median("a") == 145)
    }
}
