@testable import BatonCore
@testable import BatonEngine
import Testing

/// `on: { failure, success, change }`: a run's end triggers other actions, in the store item of
/// the end, one level deep unless the hook's action says `chain`.
@Suite("Conductor state: hooks")
struct ConductorHookTests {
    static let start = Timestamp(rawValue: 1_000_000_000)

    static func action(_ name: String, hooks: [HookEvent: Action] = [:], chain: Bool = false) -> Action {
        var action = Action(name: name, exec: [name], policy: .queue)
        for (event, target) in hooks { action.hooks.targets[event] = HookTarget(action: target, params: [:]) }
        action.hooks.chain = chain
        return action
    }

    static let page = action("page")
    static let notify = action("notify")
    static let flip = action("flip")
    static let deploy = action("deploy", hooks: [.failure: page, .success: notify, .change: flip])

    /// What driving the state until no write is left did: every entry written and every launch, in order.
    struct Settled {
        var entries: [[JournalEntry]] = []
        var launches: [Launch] = []
    }

    /// Performs the writes (all committed) and collects the launches, until the state asks for no more writes.
    static func settle(_ state: inout ConductorState, _ effects: [ConductorState.Effect], at now: Timestamp) -> Settled {
        var settled = Settled()
        var queue = effects
        while !queue.isEmpty {
            let effect = queue.removeFirst()
            switch effect {
            case let .write(entries, id):
                settled.entries.append(entries)
                queue += state.handle(.committed(id, nil), at: now)
            case let .launch(launch):
                settled.launches.append(launch)
            default:
                break
            }
        }
        return settled
    }

    /// Triggers `action` and lets its run start; returns the run's id.
    static func started(_ state: inout ConductorState, _ action: Action, token: UInt64, at now: Timestamp) throws -> Int64 {
        let trigger = Trigger(action: action, key: action.name, policy: action.policy, params: [:], peer: nil)
        let settled = settle(&state, state.handle(.trigger(token, trigger), at: now), at: now)
        return try #require(settled.launches.first { $0.action.name == action.name }).run
    }

    /// Ends run `id`'s first attempt with `status`; returns what followed.
    static func exit(_ state: inout ConductorState, _ id: Int64, status: Int32, output: [UInt8] = [], at now: Timestamp) -> Settled {
        settle(&state, state.handle(.exited(run: id, attempt: 1, AttemptOutcome(result: .exited(status: status), output: output)), at: now),
               at: now)
    }

    /// Runs `action` once to its end with `status`; returns the runs its end created (the hook runs).
    static func run(_ state: inout ConductorState, _ action: Action, status: Int32, token: UInt64, output: [UInt8] = [])
        throws -> (id: Int64, hooks: [RunSnapshot], settled: Settled) {
        let id = try started(&state, action, token: token, at: start + .seconds(Int64(token)))
        let settled = exit(&state, id, status: status, output: output, at: start + .seconds(Int64(token)) + .milliseconds(10))
        let hooks = settled.entries.flatMap { $0 }.compactMap { entry -> RunSnapshot? in
            if case let .created(run, _) = entry, run.hook?.run == id { run } else { nil }
        }
        return (id, hooks, settled)
    }

    @Test("which outcomes fire which hooks: failure and success their own, change only against a different previous outcome, cancelled none",
          arguments: [
              (Phase.failure, nil, [HookEvent.failure]), (.success, nil, [.success]),
              (.failure, .success, [.failure, .change]), (.success, .failure, [.success, .change]),
              (.failure, .failure, [.failure]), (.success, .success, [.success]),
              (.cancelled, .success, []), (.cancelled, nil, []),
          ] as [(Phase, Phase?, [HookEvent])])
    func fired(phase: Phase, previous: Phase?, events: [HookEvent]) {
        #expect(Self.deploy.hooks.fired(by: phase, previous: previous) == events)
        #expect(Self.page.hooks.fired(by: phase, previous: previous) == [])
    }

    @Test("a failure creates its hook's run in the store item of the end, and the hook run is told what fired it")
    func failureFiresInTheEndsItem() throws {
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        let output = Array(repeating: UInt8(ascii: "a"), count: 5_000) + Array("boom\n".utf8)
        let (id, hooks, settled) = try Self.run(&state, Self.deploy, status: 3, token: 1, output: output)
        let hook = try #require(hooks.first)
        #expect(hooks.count == 1 && hook.action == "page" && hook.phase == .queued)
        #expect(hook.hook == HookCause(run: id, action: "deploy", event: .failure))
        #expect(hook.via == "the failure hook of deploy run \(id)")
        let item = try #require(settled.entries.first { $0.contains { if case .created = $0 { true } else { false } } })
        #expect(item.contains { if case let .transition(t) = $0 { t.runID == id && t.to == .failure } else { false } },
                "the end and its hook's trigger are one item: \(item)")
        let launch = try #require(settled.launches.first { $0.run == hook.id })
        let told = try #require(launch.hook)
        #expect(told.output.count == HookContext.outputLimit && told.output.suffix(5) == Array("boom\n".utf8))
        #expect(told.environment["BATON_HOOK_RUN_ID"] == String(id) && told.environment["BATON_HOOK_ACTION"] == "deploy")
        #expect(told.environment["BATON_HOOK_PHASE"] == "failure" && told.environment["BATON_HOOK_EXIT_CODE"] == "3")
        #expect(told.environment["BATON_HOOK_KEY"] == "deploy" && told.environment["BATON_HOOK_REASON"] == "exit")
    }

    @Test("change fires only when the key's outcome differs from its previous one: a failure after success, a recovery")
    func change() throws {
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        let sequence: [(Int32, [String])] = [(0, ["notify"]), (0, ["notify"]), (1, ["page", "flip"]), (1, ["page"]), (0, ["notify", "flip"])]
        var token: UInt64 = 1
        for (status, expected) in sequence {
            let ran = try Self.run(&state, Self.deploy, status: status, token: token)
            #expect(ran.hooks.map(\.action) == expected, "exit \(status) as run \(ran.id)")
            // Let the hook runs end, so that the next hook of the same action starts afresh.
            for hook in ran.hooks { _ = Self.exit(&state, hook.id, status: 0, at: Self.start + .seconds(Int64(token)) + .milliseconds(20)) }
            token += 1
        }
    }

    @Test("change compares against the outcome before a restart, when it is seeded from the history")
    func changeAfterRestart() throws {
        var before = RunSnapshot(id: 9, action: "deploy", key: "deploy", phase: .failure, policy: .queue, params: [:], trigger: nil,
                                 queuedAt: Self.start)
        var older = before
        older.id = 8
        older.phase = .success
        var seeded = ConductorState(maxConcurrentRuns: 4, seed: 1)
        seeded.reserveIDs(from: 10)
        seeded.remember(outcomes: [before, older])
        #expect(try Self.run(&seeded, Self.deploy, status: 0, token: 1).hooks.map(\.action) == ["notify", "flip"])
        before.phase = .success
        var unchanged = ConductorState(maxConcurrentRuns: 4, seed: 1)
        unchanged.reserveIDs(from: 10)
        unchanged.remember(outcomes: [older, before])
        #expect(try Self.run(&unchanged, Self.deploy, status: 0, token: 1).hooks.map(\.action) == ["notify"])
        var fresh = ConductorState(maxConcurrentRuns: 4, seed: 1)
        #expect(try Self.run(&fresh, Self.deploy, status: 0, token: 1).hooks.map(\.action) == ["notify"])
    }

    @Test("a hook run's own end fires its action's hooks only where that action says chain")
    func oneLevel() throws {
        for chain in [false, true] {
            let escalate = Self.action("escalate")
            let page = Self.action("page", hooks: [.failure: escalate], chain: chain)
            let deploy = Self.action("deploy", hooks: [.failure: page])
            var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
            let hook = try #require(try Self.run(&state, deploy, status: 1, token: 1).hooks.first)
            let ended = Self.exit(&state, hook.id, status: 1, at: Self.start + .seconds(5))
            let escalations = ended.entries.flatMap { $0 }.filter { if case let .created(run, _) = $0 { run.action == "escalate" } else { false } }
            #expect(escalations.count == (chain ? 1 : 0), "chain \(chain)")
            // A page triggered by hand is no hook run: its failure escalates either way.
            let own = try Self.run(&state, page, status: 1, token: 9)
            #expect(own.hooks.map(\.action) == ["escalate"])
        }
    }

    @Test("a cancelled run fires nothing; a hook whose action is busy is decided by that action's own policy")
    func cancelledAndBusy() throws {
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        let id = try Self.started(&state, Self.deploy, token: 1, at: Self.start)
        let cancelled = Self.settle(&state, state.handle(.cancel(2, .run(id), by: 0), at: Self.start), at: Self.start)
        let exit = Self.exit(&state, id, status: 143, at: Self.start + .seconds(1))
        #expect(!(cancelled.entries + exit.entries).flatMap { $0 }.contains { if case .created = $0 { true } else { false } })
        var rejecting = Self.action("page")
        rejecting.policy = .reject
        let deploy = Self.action("deploy", hooks: [.failure: rejecting])
        var busy = ConductorState(maxConcurrentRuns: 4, seed: 1)
        let holder = try Self.started(&busy, rejecting, token: 1, at: Self.start)
        let ran = try Self.run(&busy, deploy, status: 1, token: 2)
        #expect(ran.hooks.isEmpty)
        let records = ran.settled.entries.flatMap { $0 }.compactMap { if case let .trigger(record) = $0 { record } else { nil } }
        #expect(records.map(\.decision) == [.rejected] && records.first?.runID == holder && records.first?.action == "page")
    }

    @Test("recovery: an interrupted run fires its failure hook, and a queued hook run is told what fired it again")
    func recovery() throws {
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        let loading = RunSnapshot(id: 4, action: "deploy", key: "deploy", phase: .loading, policy: .queue, params: [:], trigger: nil,
                                  queuedAt: Self.start)
        var queuedHook = RunSnapshot(id: 3, action: "notify", key: "notify", phase: .queued, policy: .queue, params: [:], trigger: nil,
                                     queuedAt: Self.start)
        let cause = HookCause(run: 2, action: "deploy", event: .success)
        queuedHook.hook = cause
        var ended = loading
        ended.id = 2
        ended.phase = .success
        let context = HookContext(cause: cause, run: ended, output: Array("done\n".utf8))
        let runs = [RecoveredRun(UnfinishedRun(run: queuedHook, lastSeq: 1, hook: context), action: Self.notify),
                    RecoveredRun(UnfinishedRun(run: loading, lastSeq: 2), action: Self.deploy)]
        let settled = Self.settle(&state, state.handle(.recover(1, runs), at: Self.start), at: Self.start)
        let created = settled.entries.flatMap { $0 }.compactMap { if case let .created(run, _) = $0 { run } else { nil } }
        #expect(created.map(\.action) == ["page"] && created.first?.hook == HookCause(run: 4, action: "deploy", event: .failure))
        #expect(settled.launches.first { $0.run == 3 }?.hook == context)
        #expect(settled.launches.first { $0.run == created.first?.id }?.hook?.reason == "interrupted")
    }

    @Test("a store that decides hooks (a fleet) gets the end's firing in the end's item, after it, and the state makes no hook run; a hook run's end without chain fires nothing, cancelled fires nothing")
    func storeDecidesHooks() throws {
        var state = ConductorState(maxConcurrentRuns: 4)
        state.storeDecidesHooks = true
        let failed = try Self.run(&state, Self.deploy, status: 3, token: 1)
        #expect(failed.hooks.isEmpty && state.inFlight.isEmpty, "no hook run decided against the local table")
        let item = try #require(failed.settled.entries.first { $0.contains(where: \.isEnd) })
        guard case let .hooks(firing)? = item.last else { Issue.record("the end's item does not end with its firing: \(item)"); return }
        #expect(firing.run.id == failed.id && firing.run.phase == .failure && firing.hooks == Self.deploy.hooks)
        #expect(item.firstIndex(where: \.isEnd)! < item.count - 1)
        #expect(state.outcomes.isEmpty, "the store keeps the key's last outcome")

        var hookRun = RunSnapshot(id: 40, action: "deploy", key: "deploy", phase: .failure, policy: .queue, params: [:], trigger: nil,
                                  queuedAt: Self.start)
        hookRun.hook = HookCause(run: 7, action: "other", event: .failure)
        #expect(HookFiring(run: hookRun, hooks: Self.deploy.hooks) == nil)
        #expect(HookFiring(run: hookRun, hooks: Self.action("deploy", hooks: [.failure: Self.page], chain: true).hooks) != nil)
        hookRun.hook = nil
        hookRun.phase = .cancelled
        #expect(HookFiring(run: hookRun, hooks: Self.deploy.hooks) == nil)
    }
}
