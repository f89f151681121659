@testable import BatonCore
@testable import BatonEngine

/// A random walk through `ConductorState`: the outside world (the store committing in order,
/// attempts starting and exiting, timers, triggers of every policy, cancels, shutdown) simulated
/// as plain values, the choices taken from a `Choices` source, and every invariant checked after
/// every step. Shared by the seeded test and the libFuzzer target (Tests/Fuzz/ConductorFuzzer.swift).
struct ConductorWalk {
    /// Where choices come from: a seeded generator in the test, the fuzzer's bytes in the fuzzer.
    protocol Choices {
        /// A number in 0..<n; nil when the source is exhausted.
        mutating func next(_ n: Int) -> Int?
    }

    static let actions: [Action] = [
        Action(name: "reject", exec: ["x"], policy: .reject, policies: [.join, .queue, .replace], params: ["k": ParamSpec()], keyParams: ["k"]),
        Action(name: "join", exec: ["x"], policy: .join, retry: RetryPolicy(attempts: 2, backoff: .seconds(1))),
        Action(name: "queue", exec: ["x"], timeout: .seconds(30), policy: .queue, params: ["k": ParamSpec()], keyParams: ["k"]),
        {
            // Pauses itself after two failures in a row; the walk resumes it now and then.
            var replace = Action(name: "replace", exec: ["x"], timeout: .seconds(5), policy: .replace, retry: RetryPolicy(attempts: 1))
            replace.pauseAfterFailures = 2
            return replace
        }(),
        {
            // Windows of 1 s, steps of 1 to 50 ms: a trigger of the key soon after a success often
            // falls inside (with 200 ms, 450 walks passed with the cooldown never applied), some after.
            var cool = Action(name: "cool", exec: ["x"], policy: .join, policies: [.reject, .queue, .replace],
                              params: ["k": ParamSpec()], keyParams: ["k"])
            cool.cooldown = .seconds(1)
            cool.allowsForce = true
            return cool
        }(),
        hooked, pager,
        // A line of three: follow-ups with params of their own (p), joined by equal params, refused beyond.
        {
            var lined = Action(name: "lined", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace],
                               params: ["k": ParamSpec(), "p": ParamSpec()], keyParams: ["k"])
            lined.queueDepth = 3
            return lined
        }(),
        // Locks between actions: db held alone, io by two at once; `backup` takes both.
        locked("migrate", ["db"], policy: .queue),
        locked("backup", ["db", "io"], policy: .reject, retry: RetryPolicy(attempts: 1, backoff: .seconds(1))),
        locked("scan", ["io"], policy: .join, keyed: true),
        // Debounce: windows of 100 ms (steps of 1 to 50), capped at 300 ms, inside a cooldown of 150 ms.
        {
            var bounce = Action(name: "bounce", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace],
                                params: ["k": ParamSpec()], keyParams: ["k"])
            bounce.debounce = .milliseconds(100)
            bounce.maxWait = .milliseconds(300)
            bounce.cooldown = .milliseconds(150)
            return bounce
        }(),
        // Rate limits: `rated` lets 2 runs of a key start per 200 ms and refuses more; `throttled`
        // lets 1 run of the whole action start per 150 ms and delays the rest (steps of 1 to 50 ms).
        {
            var rated = Action(name: "rated", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace],
                               params: ["k": ParamSpec()], keyParams: ["k"])
            rated.rateLimit = RateLimit(runs: 2, per: .milliseconds(200))
            return rated
        }(),
        {
            var throttled = Action(name: "throttled", exec: ["x"], policy: .reject, policies: [.queue, .join, .replace],
                                   retry: RetryPolicy(attempts: 1, backoff: .milliseconds(10)), params: ["k": ParamSpec()], keyParams: ["k"])
            throttled.rateLimit = RateLimit(runs: 1, per: .milliseconds(150), scope: .action, over: .delay)
            return throttled
        }(),
        // Needs: `ship` needs `build` (keyed, its `k` passed through) and `fetch` (which retries);
        // `release` needs `ship`, a chain. Each is also triggered by itself, and fails now and then.
        build, ship,
        {
            var release = Action(name: "release", exec: ["x"], policy: .reject, policies: [.join, .queue, .replace],
                                 params: ["k": ParamSpec()], keyParams: ["k"])
            release.needs = [NeedTarget(action: ship, params: ["k": "{k}"])]
            return release
        }(),
        gated, prelude, deployer,
    ]

    /// Runs of `gated` made by others' runs (review of issue 40, item 1): `prelude`'s success
    /// fires one (a hook's run, no trigger of its own), and `deployer` needs one. Both are
    /// triggered by uids 3000 and 3001; the run of `gated` they make is not its origin's to approve.
    static let prelude: Action = {
        var prelude = Action(name: "prelude", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace])
        prelude.hooks.targets = [.success: HookTarget(action: gated, params: ["k": "1"])]
        return prelude
    }()
    static let deployer: Action = {
        var deployer = Action(name: "deployer", exec: ["x"], policy: .reject, policies: [.join, .queue, .replace])
        deployer.needs = [NeedTarget(action: gated, params: ["k": "2"])]
        return deployer
    }()

    /// Approvals: each run of `gated` waits for a yes from group 10 (uids 3000 and 3001, who also
    /// trigger it; uid 4000 is not in it) for 200 ms, then is cancelled; never its own trigger's.
    static let gated: Action = {
        var gated = Action(name: "gated", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace],
                           params: ["k": ParamSpec()], keyParams: ["k"])
        gated.approve = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [10]), timeout: .milliseconds(200))
        return gated
    }()
    /// Reloads' configs: `gated` without `approve`, nothing else changed (its waiting runs are
    /// waived, and those made later from its old definition at their creation); with `approve`
    /// again; without `approve` and with another command (nothing is waived).
    static let reloads: [[String: Action]] = {
        var plain = gated
        plain.approve = nil
        var other = plain
        other.exec = ["y"]
        return [[plain.name: plain], [gated.name: gated], [other.name: other]]
    }()
    static let approvers = [Approver(uid: 3000, name: "u3000", groups: [10]), Approver(uid: 3001, name: "u3001", groups: [10]),
                            Approver(uid: 4000, name: "u4000", groups: [20])]

    static let build = Action(name: "build", exec: ["x"], policy: .join, policies: [.reject, .queue, .replace],
                              params: ["k": ParamSpec()], keyParams: ["k"])
    static let ship: Action = {
        let fetch = Action(name: "fetch", exec: ["x"], policy: .reject, retry: RetryPolicy(attempts: 1, backoff: .milliseconds(20)))
        var ship = Action(name: "ship", exec: ["x"], policy: .queue, policies: [.reject, .join, .replace],
                          params: ["k": ParamSpec()], keyParams: ["k"])
        ship.needs = [NeedTarget(action: build, params: ["k": "{k}"]), NeedTarget(action: fetch, params: [:])]
        return ship
    }()

    /// Hooks: `hooked` pages on failure (a queue), notifies on success (a reject) and flips on
    /// a change (a replace); `pager`, a hook's action, escalates its own failures one level deep
    /// only (no `chain`), so a page by hand escalates and a hook's page does not.
    static let pager: Action = {
        var pager = Action(name: "pager", exec: ["x"], policy: .queue, policies: [.reject, .join])
        pager.hooks.targets[.failure] = HookTarget(action: Action(name: "escalate", exec: ["x"], policy: .join), params: [:])
        return pager
    }()
    static let hooked: Action = {
        var hooked = Action(name: "hooked", exec: ["x"], policy: .join, policies: [.reject, .queue, .replace],
                            retry: RetryPolicy(attempts: 1), params: ["k": ParamSpec()], keyParams: ["k"])
        hooked.hooks.targets = [.failure: HookTarget(action: pager, params: [:]),
                                .success: HookTarget(action: notify, params: [:]),
                                .change: HookTarget(action: Action(name: "flip", exec: ["x"], policy: .replace), params: [:])]
        return hooked
    }()

    /// A hook's action that debounces: a burst of successes notifies once.
    static let notify: Action = {
        var notify = Action(name: "notify", exec: ["x"], policy: .reject)
        notify.debounce = .milliseconds(60)
        return notify
    }()

    static func locked(_ name: String, _ locks: [String], policy: Policy, retry: RetryPolicy = .none, keyed: Bool = false) -> Action {
        var action = Action(name: name, exec: ["x"], timeout: .seconds(20), policy: policy, policies: [.reject, .join, .queue, .replace],
                            retry: retry, params: keyed ? ["k": ParamSpec()] : [:], keyParams: keyed ? ["k"] : [])
        action.locks = locks.map { LockClaim($0, limit: $0 == "io" ? 2 : 1) }
        return action
    }

    private(set) var state: ConductorState
    private(set) var now = Timestamp(rawValue: 1_000_000)
    private(set) var violations: [String] = []
    private(set) var steps = 0
    /// Every event and its effects, when `tracing` (to read a failing seed's story).
    var tracing = false
    private(set) var trace: [String] = []

    // The simulated world.
    private var writes: [(id: ConductorState.CommitID, entries: [JournalEntry])] = []
    // The items durable (not failed).
    private var committed: Set<ConductorState.CommitID> = []
    private var attempts: [Int64: (attempt: Int, started: Bool)] = [:]
    private var timers: [Int64: Set<ConductorState.Timer>] = [:]
    private var nextToken: ConductorState.Token = 1
    private var asked: [ConductorState.Token: Set<ConductorState.CommitID>] = [:]
    private var answered: Set<ConductorState.Token> = []
    private var shutDown = false
    private var drained = false
    // Hand-overs asked and not answered yet: each run's attempt.
    private var handOvers: [Int64: Int] = [:]

    // The store's view: each run's last seq and phase, and where its creation was written.
    private var stored: [Int64: (seq: Int, phase: Phase)] = [:]
    private var creationCommit: [Int64: ConductorState.CommitID] = [:]
    // Where each run's latest `loading` was written, and its attempt: its process starts once that is durable.
    private var loadingCommit: [Int64: (attempt: Int?, commit: ConductorState.CommitID)] = [:]
    private var terminalDurable: Set<Int64> = []
    /// Runs whose stop was written down (`JournalEntry.stopAsked`): they only end from then on.
    private var stopMarked: Set<Int64> = []
    // A lost history file (`Store+Writer.strand`): from then on every item fails, ends and
    // `loading`s too; the runs whose end was lost with it.
    private var stranded = false
    private var endLost: Set<Int64> = []
    private var abandoned: Set<Int64> = []
    private var known: [Int64] = []
    // The cooldown's view: each key's last success (when its end was decided, from the store's
    // entries), and each run's creation time and whether its trigger was forced.
    private var lastSuccess: [String: Timestamp] = [:]
    private var createdAt: [Int64: (key: String, at: Timestamp, action: Action)] = [:]
    private var forced: Set<Int64> = []
    // Which came first, by event rather than by time: the walk's drain lets events happen
    // without the clock moving, so a follow-up and the success it follows may share a time.
    private var successStep: [String: Int] = [:]
    private var createdStep: [Int64: Int] = [:]
    // The slots' view: the run created for each action and slot.
    private var slotRuns: [String: Int64] = [:]
    // The hooks' view: every run's action and key, the hook runs and what fired them, the last
    // outcome of each key with a `change` hook, and every (run, hook) that has fired.
    private var runAction: [Int64: (action: Action, key: String)] = [:]
    private var hookCause: [Int64: HookCause] = [:]
    private var lastOutcome: [String: Phase] = [:]
    private var fired: Set<String> = []
    // The debounce's view: each debounced run's burst (its creation and the last trigger recorded
    // against it), the run of each key not yet started that a trigger must share, what each
    // debounced trigger found when it came, and when each timer is due (a drain moves the clock
    // to a window's end, as time would).
    private var bursts: [Int64: (first: Timestamp, last: Timestamp, action: Action)] = [:]
    private var pendingRun: [String: Int64] = [:]
    private var debouncedAsks: [ConductorState.Token: (key: String, pending: Int64?)] = [:]
    private var timerDue: [Int64: [ConductorState.Timer: Timestamp]] = [:]
    // The line's view: each key's follow-ups in the order they were created and not yet started
    // or ended; the first of them must be the next to start.
    private var lineOrder: [String: [Int64]] = [:]
    private var lineKey: [Int64: String] = [:]
    // The needs' view: what each run needs, each run's end as decided, and the runs ever launched.
    private var needsOf: [Int64: [Int64]] = [:]
    private var decidedEnd: [Int64: Phase] = [:]
    private var launchedRuns: Set<Int64> = []
    // The rate limits' view: the first starts of each bucket's runs, as launched.
    private var rateStarts: [String: [Timestamp]] = [:]
    // The approvals' view: each run's origin (its trigger's uid, or that of the run whose hook or
    // need made it), and the runs whose approval was decided (approved or not).
    private var originUID: [Int64: UInt32] = [:]
    private var approvalDecided: [Int64: ApprovalState.Verdict] = [:]
    /// Whether the last reload dropped `gated`'s approve and nothing else (`reloads[0]`): only
    /// then, and only a run of `gated`, is a wait waived.
    private var approveDropped = false
    /// Each run's action name, as its creation was written.
    private var runActionName: [Int64: String] = [:]

    init(maxConcurrentRuns: Int, seed: UInt64, storeDecidesHooks: Bool = false, handsOver: Bool = false) {
        state = ConductorState(maxConcurrentRuns: maxConcurrentRuns, seed: seed)
        state.handsOver = handsOver
        state.storeDecidesHooks = storeDecidesHooks
        // A fleet host: its store decides hooks and counts failures alike.
        state.storeCountsFailures = storeDecidesHooks
    }

    // MARK: Walking

    /// Takes one random step; false when the choices ran out.
    mutating func step(_ choices: inout some Choices) -> Bool {
        guard let kind = choices.next(15) else { return false }
        now = now + .milliseconds(1 + (choices.next(50) ?? 0))
        switch kind {
        case 0, 1, 2:
            guard let action = choices.next(Self.actions.count), let key = choices.next(3), let override = choices.next(6) else { return false }
            trigger(Self.actions[action], key: key, override: override)
        case 3, 4, 5:
            commitOldest(fail: choices.next(12) == 0)
        case 6, 7:
            guard let run = pick(attempts.keys.sorted(), &choices), let how = choices.next(4) else { return true }
            let attempt = attempts[run]!
            if !attempt.started {
                attempts[run]!.started = true
                apply(.started(run: run, attempt: attempt.attempt, ProcessGroup(pgid: Int32(run), identity: "t")))
            } else if how == 0 {
                apply(.progress(run: run, attempt: attempt.attempt, Progress(fraction: 0.5)))
            } else {
                attempts[run] = nil
                let result: AttemptResult = how == 1 ? .exited(status: 1) : .exited(status: 0)
                apply(.exited(run: run, attempt: attempt.attempt, AttemptOutcome(result: result)))
            }
        case 8:
            guard let run = pick(timers.keys.sorted(), &choices),
                  let timer = pick(timers[run]!.sorted { "\($0)" < "\($1)" }, &choices) else { return true }
            timers[run]!.remove(timer)
            apply(.timer(run: run, timer))
        case 9, 10:
            guard let run = pick(known, &choices), let byAction = choices.next(3) else { return true }
            let target: ConductorState.CancelTarget = byAction == 0
                ? .action(Self.actions[Int(run) % Self.actions.count].name, key: nil) : .run(run)
            ask { .cancel($0, target, by: 1000) }
        case 11:
            guard let run = pick(known, &choices) else { return true }
            ask { .attach($0, run: run) }
        case 12:
            let choice = choices.next(20)
            if choice == 0, !shutDown { shutDown = true; apply(.shutdown) }
            // Pauses: `join` for 100 ms (it ends by itself; held or not), and resumes of `join` and `replace`.
            var pause = ActionPause(action: "join", by: "walk", reason: "test", at: now, until: now + .milliseconds(100))
            if choice == 1 {
                pause.hold = choices.next(2) == 0
                ask { [pause] in .pause($0, pause) }
            }
            if choice == 2 || choice == 3 { ask { .resume($0, action: choice == 2 ? "join" : "replace", by: "walk") } }
            // A fleet host's feed: the pauses another host made or ended (`join` paused for 100 ms, or none).
            if choice == 4, state.storeCountsFailures { apply(.pausesSeen(choices.next(2) == 0 ? [pause] : [], readAt: now)) }
            // The conductor's answer to a hand-over asked (kept or not), in any order with the attempt's end.
            if choice == 5 || choice == 6, let run = handOvers.keys.min() { answerHandOver(run, kept: choice == 5) }
            // Now and then the history file is lost: every item fails from then on.
            if choice == 13, choices.next(3) == 0 { stranded = true }
            // Now and then a reload drops gated's approve: its waiting runs are waived and may start.
            if choice == 14, choices.next(4) == 0, let kind = choices.next(Self.reloads.count) {
                approveDropped = kind == 0
                apply(.reloaded(Self.reloads[kind]))
            }
            // An approve (7 to 10) or deny (11, 12) of any run, by one of group 10 or by someone outside it.
            if (7...12).contains(choice ?? 0), let run = pick(known, &choices), let who = choices.next(Self.approvers.count) {
                ask { .approval($0, run: run, Self.approvers[who], approve: choice! <= 10, reason: "walk") }
            }
        case 13:
            // A second stop signal, now and then: the drain stops waiting for writes.
            if shutDown, choices.next(6) == 0 { apply(.abandonWrites) } else if shutDown { apply(.graceElapsed) }
            else { commitOldest(fail: false) }
        default:
            if shutDown { apply(.graceElapsed) } else { commitOldest(fail: false) }
        }
        return true
    }

    /// Lets everything outstanding happen (commits, exits, timers) until nothing is left, then
    /// checks that every question was answered and, unless shut down, every run has ended.
    /// The conductor answers a hand-over: kept, the attempt is the shim's (this batond hears no end of it).
    private mutating func answerHandOver(_ run: Int64, kept: Bool) {
        guard let attempt = handOvers.removeValue(forKey: run) else { return }
        if kept, attempts[run]?.attempt == attempt { attempts[run] = nil }
        apply(.handedOver(run: run, attempt: attempt, kept: kept))
    }

    mutating func drain() {
        var rounds = 0
        while rounds < 100_000 {
            rounds += 1
            if !writes.isEmpty { commitOldest(fail: false); continue }
            if let run = attempts.keys.min(), let attempt = attempts[run] {
                attempts[run] = nil
                if !attempt.started { apply(.started(run: run, attempt: attempt.attempt, nil)) }
                apply(.exited(run: run, attempt: attempt.attempt, AttemptOutcome(result: .exited(status: 0))))
                continue
            }
            if let run = timers.keys.sorted().first(where: { !timers[$0]!.isEmpty }),
               let timer = timers[run]!.sorted(by: { "\($0)" < "\($1)" }).first {
                timers[run]!.remove(timer)
                if timer == .debounce || timer == .pauseEnd || timer == .rateLimit || timer == .approval, let due = timerDue[run]?[timer] { now = max(now, due) }
                apply(.timer(run: run, timer))
                continue
            }
            if let run = handOvers.keys.min() { answerHandOver(run, kept: run % 2 == 0); continue }
            break
        }
        for token in asked.keys where !answered.contains(token) { violate("question \(token) was never answered") }
        if !shutDown {
            // A paused action's queued runs wait for a resume, which only a person gives.
            for run in state.inFlight where !(run.phase == .queued && state.pause(of: run.action, at: now) != nil) {
                violate("run \(run.id) is still \(run.phase.rawValue) with nothing left to happen")
            }
        }
    }

    // MARK: Events

    private mutating func trigger(_ action: Action, key: Int, override: Int) {
        var params = action.keyParams.isEmpty ? [:] : ["k": String(key)]
        if action.params["p"] != nil { params["p"] = String((key + override) % 4) }
        let policy = override < Policy.allCases.count && action.policies.contains(Policy.allCases[override]) ? Policy.allCases[override] : action.policy
        // `override` 5 forces: honoured by the action that allows it, ignored by the others.
        // `override` 4 (the action's own policy) comes as a webhook delivery.
        // `key` 0 fires one of two schedule slots: one run per action and slot, whatever the policy.
        // An approval action's triggers come from uid 3000 or 3001, both approvers of it.
        let leadsToGated = action.approve != nil || action.name == "prelude" || action.name == "deployer"
        let peer = leadsToGated ? Peer(uid: UInt32(3000 + override % 2), gid: 10, pid: 1) : nil
        let trigger = Trigger(action: action, key: action.key(for: params), policy: policy, params: params, peer: peer,
                              force: override == 5, delivery: override == 4 ? Delivery(hook: "h", id: String(nextToken)) : nil,
                              slot: key == 0 ? Timestamp(rawValue: Int64(1 + override % 2)) : nil)
        ask { .trigger($0, trigger) }
    }

    private mutating func ask(_ make: (ConductorState.Token) -> ConductorState.Event) {
        let token = nextToken
        nextToken += 1
        asked[token] = []
        // A scheduled trigger is the slot's first: it may share the slot's run instead.
        if case let .trigger(_, trigger) = make(token), trigger.action.debounce != nil, trigger.slot == nil {
            debouncedAsks[token] = (trigger.key, pendingRun[trigger.key])
        }
        apply(make(token))
    }

    private mutating func commitOldest(fail: Bool) {
        guard !writes.isEmpty else { return }
        let write = writes.removeFirst()
        // A store refuses only items that answer a trigger (creations, trigger records), never an end.
        let refusable = !write.entries.contains(where: \.isEnd)
            && write.entries.contains { if case .created = $0 { true } else if case .trigger = $0 { true } else { false } }
        let failure: BatonError? = stranded || (fail && refusable) ? .storeUnavailable("full") : nil
        if failure == nil { store(write.entries) } else if stranded { strand(write.entries) } else { refuse(write.entries) }
        // Durable only when it did not fail: a failed `loading` launches nothing.
        if failure == nil { committed.insert(write.id) }
        apply(.committed(write.id, failure))
    }

    private func pick<T>(_ items: [T], _ choices: inout some Choices) -> T? {
        guard !items.isEmpty, let index = choices.next(items.count) else { return nil }
        return items[index]
    }

    // MARK: Effects and invariants

    private mutating func apply(_ event: ConductorState.Event) {
        steps += 1
        let paused = Set(state.pauses.values.filter { $0.holds(at: now) }.map(\.action))
        // A held pause (`--hold`) makes runs, which wait: none is created under a pause that refuses.
        let refusing = Set(state.pauses.values.filter { $0.refuses(at: now) }.map(\.action))
        let handlingCommit: ConductorState.CommitID? = if case let .committed(id, _) = event { id } else { nil }
        let effects = state.handle(event, at: now)
        if tracing { trace.append("\(steps): \(event)\n    → \(effects)") }
        var wrote: Set<ConductorState.CommitID> = []
        for effect in effects {
            switch effect {
            case let .write(entries, id):
                wrote.insert(id)
                writes.append((id, entries))
                for case let .transition(transition) in entries where transition.to == .loading {
                    loadingCommit[transition.runID] = (transition.detail.attempt, id)
                }
                for case let .created(run, transition) in entries {
                    if let slot = run.slot {
                        let name = "\(run.action) slot \(slot.rawValue)"
                        if let other = slotRuns[name], !abandoned.contains(other) { violate("run \(run.id) is a second run of \(name) (run \(other))") }
                        slotRuns[name] = run.id
                    }
                    creationCommit[run.id] = id
                    known.append(run.id)
                    if refusing.contains(run.action) { violate("run \(run.id) of \(run.action) was created while its action was paused") }
                    if transition.detail.reason?.hasPrefix("follow-up") == true {
                        lineOrder[run.key, default: []].append(run.id)
                        lineKey[run.id] = run.key
                    }
                    if case let .trigger(_, trigger) = event {
                        // A needed run made by the trigger is of its own action (never forced).
                        let made = trigger.action.name == run.action ? trigger.action : Self.hookActions[run.action] ?? trigger.action
                        createdAt[run.id] = (run.key, transition.at, made)
                        createdStep[run.id] = steps
                        if trigger.force && trigger.action.allowsForce && trigger.action.name == run.action { forced.insert(run.id) }
                    }
                    let action = run.hook != nil || run.via?.hasPrefix("needed by") == true ? Self.hookActions[run.action]
                        : { if case let .trigger(_, trigger) = event { trigger.action } else { nil } }()
                    if let action, action.debounce != nil {
                        if let other = pendingRun[run.key] { violate("run \(run.id) is a second pending run of key \(run.key) (run \(other) has not started)") }
                        pendingRun[run.key] = run.id
                        bursts[run.id] = (transition.at, transition.at, action)
                    }
                }
                // A hook's trigger of a debounced action shares its key's pending run too.
                if case .trigger = event {} else {
                    for case let .trigger(record) in entries where Self.hookActions[record.action]?.debounce != nil {
                        if let pending = pendingRun[record.key], record.decision != .debounced || record.runID != pending {
                            violate("a hook's trigger of \(record.key) was \(record.decision) against \(String(describing: record.runID)) while run \(pending) was pending")
                        }
                    }
                }
                for case let .trigger(record) in entries where record.decision == .debounced {
                    guard let id = record.runID else { violate("a debounced trigger recorded against no run"); continue }
                    bursts[id]?.last = record.at
                    if pendingRun[record.key] != id { violate("a trigger was debounced into run \(id), not its key's pending run") }
                }
                for case let .transition(transition) in entries where transition.to.isTerminal {
                    unpend(transition.runID)
                    leaveLine(transition.runID)
                }
                checkHooks(entries, event)
                checkNeeds(entries)
                checkApprovals(entries)
                // A success is decided when its transition is written (it is never refused).
                for case let .transition(transition) in entries where transition.to == .success {
                    if let created = createdAt[transition.runID], created.action.cooldown != nil {
                        lastSuccess[created.key] = transition.at
                        successStep[created.key] = steps
                    }
                }
                // Its start is decided here (the run's needs, the pauses, as this write leaves them).
                for case let .transition(transition) in entries where transition.to == .loading {
                    if let flight = state.flights[transition.runID], let attempt = transition.detail.attempt {
                        checkStart(Launch(run: transition.runID, attempt: attempt, action: flight.action, params: flight.run.params,
                                          runner: nil, hook: flight.hook), paused: paused)
                    }
                }
            case let .launch(launch):
                // Write-ahead: a crash never leaves a process of a run whose `loading` is not durable.
                if launch.surviving == nil, loadingCommit[launch.run].map({ $0.attempt != launch.attempt || !committed.contains($0.commit) }) ?? true {
                    violate("run \(launch.run) started attempt \(launch.attempt) before its loading was durable")
                }
                if let commit = creationCommit[launch.run], !committed.contains(commit) {
                    violate("run \(launch.run) started before its creation was durable")
                }
                if attempts[launch.run] != nil { violate("run \(launch.run) started attempt \(launch.attempt) while one runs") }
                if handOvers[launch.run] != nil { violate("run \(launch.run) started attempt \(launch.attempt) while its hand-over is asked") }
                checkLaunchWanted(launch, effects)
                attempts[launch.run] = (launch.attempt, false)
            case .stop:
                break
            case let .schedule(run, timer, after):
                timers[run, default: []].insert(timer)
                timerDue[run, default: [:]][timer] = now + after
            case let .cancelTimers(run):
                timers[run] = nil
                timerDue[run] = nil
            case let .answer(token, _):
                guard asked[token] != nil else { violate("answer to a question never asked: \(token)"); continue }
                if answered.contains(token) { violate("question \(token) answered twice") }
                answered.insert(token)
                if let commits = asked[token], !commits.isEmpty, !(handlingCommit.map { commits.contains($0) } ?? false) {
                    violate("question \(token) answered outside the commits of its writes (\(commits.sorted()))")
                }
                if let ask = debouncedAsks.removeValue(forKey: token) { checkDebounced(token, ask, effect) }
            case .publish:
                break
            case let .close(run):
                if !terminalDurable.contains(run) && !abandoned.contains(run) && !endLost.contains(run) {
                    violate("run \(run)'s waiters closed before its end was durable")
                }
            case .drained:
                if !shutDown { violate("drained without a shutdown") }
                if drained { violate("drained twice") }
                drained = true
                // However the drain ends (every end durable, or writes abandoned), no attempt runs.
                for run in state.flights.values where !run.isOver && run.machine.phase != .queued && run.handOver != .done {
                    violate("drained while run \(run.run.id) is still \(run.machine.phase.rawValue)")
                }
                if let run = state.flights.values.first(where: { $0.machine.phase != .queued && $0.handOver != .done }) {
                    violate("drained before run \(run.run.id)'s end was durable")
                }
            case let .handOver(run, attempt):
                if !state.handsOver { violate("a hand-over asked of a state that does not hand over") }
                if attempts[run]?.attempt != attempt { violate("hand-over of run \(run)'s attempt \(attempt), which is not running") }
                handOvers[run] = attempt
            case .drainedUnwritten:
                if state.waitsForWrites { violate("drained without waiting for writes, never told to") }
                if drained { violate("drained twice") }
                drained = true
                for run in state.flights.values where !run.isOver && run.machine.phase != .queued && run.handOver != .done {
                    violate("drained while run \(run.run.id) is still \(run.machine.phase.rawValue)")
                }
            }
        }
        // A question whose step wrote must be answered when those writes commit.
        if !wrote.isEmpty, case let .trigger(token, _) = event, !answered.contains(token) { asked[token] = wrote }
        if !wrote.isEmpty, case let .cancel(token, _, _, _) = event, !answered.contains(token) { asked[token] = wrote }
        if !wrote.isEmpty, case let .pause(token, _) = event, !answered.contains(token) { asked[token] = wrote }
        if !wrote.isEmpty, case let .resume(token, _, _) = event, !answered.contains(token) { asked[token] = wrote }
        if !wrote.isEmpty, case let .approval(token, _, _, _, _) = event, !answered.contains(token) { asked[token] = wrote }
        checkState()
    }

    /// Applies committed entries as the store would, checking seq and the phase table.
    private mutating func store(_ entries: [JournalEntry]) {
        for entry in entries {
            switch entry {
            case let .created(run, transition):
                if stored[run.id] != nil { violate("run \(run.id) created twice") }
                check(transition, after: nil)
                stored[run.id] = (transition.seq, transition.to)
            case let .transition(transition):
                guard let last = stored[transition.runID] else {
                    if !abandoned.contains(transition.runID) { violate("a transition of run \(transition.runID), which was never created") }
                    continue
                }
                check(transition, after: last)
                stored[transition.runID] = (transition.seq, transition.to)
                if transition.to.isTerminal { terminalDurable.insert(transition.runID) }
                // A run whose stop is written down ends: it never starts, retries or queues again.
                if stopMarked.contains(transition.runID), !transition.to.isTerminal {
                    violate("run \(transition.runID) went \(transition.to.rawValue) after its stop was written down")
                }
            case let .delivery(_, runID, _):
                // Durable with what made it: the run's creation or the trigger that shared it, in one item.
                let withItsRun = entries.contains { entry in
                    switch entry {
                    case let .created(run, _): run.id == runID
                    case let .trigger(record): record.runID == runID && record.decision != .rejected
                    default: false
                    }
                }
                if !withItsRun { violate("a delivery of run \(runID) was written apart from the run's creation or trigger record") }
            case let .hooks(firing):
                // Left to the store (a fleet): in the item of the end that fires it.
                let withItsEnd = entries.contains { entry in
                    if case let .transition(transition) = entry { transition.runID == firing.run.id && transition.to.isTerminal } else { false }
                }
                if !withItsEnd { violate("run \(firing.run.id)'s hooks were written apart from its end") }
            case let .failureStreak(run, _, _):
                // Left to the store (a fleet): in the item of a success or failure it counts, which it names.
                let withItsEnd = entries.contains { entry in
                    if case let .transition(transition) = entry { transition.runID == run && [.success, .failure].contains(transition.to) } else { false }
                }
                if !withItsEnd { violate("run \(run)'s end was counted apart from it, or an end that does not count") }
            case let .origin(runID, _):
                // Durable with the run's row: written in the item that creates it.
                if !entries.contains(where: { if case let .created(run, _) = $0 { run.id == runID } else { false } }) {
                    violate("the origin of run \(runID) was written apart from its creation")
                }
            case let .stopAsked(runID, stop):
                // Written as a running attempt is told to stop, and only a stop a restart must know.
                if !stop.outlivesBatond { violate("run \(runID)'s stop \(stop) was written down, which a restart decides again") }
                if stored[runID]?.1 != .loading { violate("run \(runID)'s stop was written while it was \(stored[runID].map { $0.1.rawValue } ?? "unknown")") }
                stopMarked.insert(runID)
            case .trigger, .output, .processGroup, .pause, .resume, .needs, .approval:
                break
            case .outputChunks:
                violate("the state wrote output chunks: the conductor writes them, beside the state")
            }
        }
    }

    /// A refused item loses only what a refusal may lose: new runs, and the start of those runs.
    private mutating func refuse(_ entries: [JournalEntry]) {
        for case let .created(run, _) in entries { abandoned.insert(run.id); unpend(run.id); leaveLine(run.id) }
        // A stop is told to the process at once: its record is in an item a full store never refuses.
        for case let .stopAsked(runID, _) in entries { violate("run \(runID)'s stop was in an item that a full store refuses") }
        for case let .transition(transition) in entries where !abandoned.contains(transition.runID) {
            violate("run \(transition.runID)'s transition to \(transition.to) was in an item that a full store refuses")
        }
    }

    /// An item failed with the history file: its runs' creations are abandoned, their ends lost.
    private mutating func strand(_ entries: [JournalEntry]) {
        for case let .created(run, _) in entries { abandoned.insert(run.id); unpend(run.id); leaveLine(run.id) }
        for case let .transition(transition) in entries where transition.to.isTerminal { endLost.insert(transition.runID) }
    }

    private mutating func leaveLine(_ run: Int64) {
        guard let key = lineKey.removeValue(forKey: run) else { return }
        lineOrder[key]?.removeAll { $0 == run }
    }

    private mutating func check(_ transition: Transition, after last: (seq: Int, phase: Phase)?) {
        if transition.seq != (last?.seq ?? 0) + 1 { violate("run \(transition.runID): seq \(transition.seq) after \(last?.seq ?? 0)") }
        if transition.from != last?.phase { violate("run \(transition.runID): from \(String(describing: transition.from)) but stored \(String(describing: last?.phase))") }
        if !Phase.allows(from: last?.phase, to: transition.to) {
            violate("run \(transition.runID): \(String(describing: last?.phase)) → \(transition.to) is not in the phase table")
        }
    }

    /// Each approval is decided at most once, by one of its approvers who did not trigger the
    /// run nor the run whose hook or need made it (a timeout by no one), and a run's waiting is
    /// written with its creation.
    private mutating func checkApprovals(_ entries: [JournalEntry]) {
        var made: Set<Int64> = []
        for case let .created(run, _) in entries {
            made.insert(run.id)
            runActionName[run.id] = run.action
            originUID[run.id] = run.trigger?.uid ?? run.hook.flatMap { originUID[$0.run] }
        }
        // A needing run's needs entry follows those of the runs it made: the outermost first.
        for case let .needs(id, needed) in entries.reversed() {
            for need in needed where made.contains(need.run) && originUID[need.run] == nil { originUID[need.run] = originUID[id] }
        }
        // An origin written is the uid the walk follows back by itself: the trigger of the run
        // whose hook or need made this one (placed with its creation: `checkPlacement`).
        for case let .origin(id, uid) in entries where originUID[id] != uid {
            violate("run \(id)'s origin was written as uid \(uid); its hooks and needs lead back to \(originUID[id].map { "uid \($0)" } ?? "nobody")")
        }
        for case let .approval(id, approval) in entries {
            guard let verdict = approval.verdict else {
                let withItsRun = entries.contains { if case let .created(run, _) = $0 { run.id == id } else { false } }
                if !withItsRun { violate("run \(id)'s wait for approval was written apart from its creation") }
                continue
            }
            if let first = approvalDecided[id] { violate("run \(id)'s approval was decided twice: \(first), then \(verdict)") }
            approvalDecided[id] = verdict
            guard verdict != .timedOut else { continue }
            if verdict == .waived {
                if !approveDropped { violate("run \(id)'s approval was waived while the last reload kept gated's approve or changed its command") }
                if runActionName[id] != Self.gated.name { violate("run \(id) of \(runActionName[id] ?? "?") was waived; only gated's approve was dropped") }
                continue
            }
            guard let approver = Self.approvers.first(where: { $0.name == approval.decidedBy }), approver.groups.contains(10) else {
                violate("run \(id)'s approval was decided by \(String(describing: approval.decidedBy)), not one of its approvers")
                continue
            }
            if originUID[id] == approver.uid { violate("run \(id) was \(verdict) by its own origin, uid \(approver.uid)") }
        }
    }

    private mutating func checkState() {
        var active: [String: Int] = [:], queued: [String: Int] = [:], depth: [String: Int] = [:]
        var running = 0
        for flight in state.flights.values {
            if flight.run.phase != flight.machine.phase {
                violate("run \(flight.run.id): recorded \(flight.run.phase) but its machine is \(flight.machine.phase)")
            }
            switch flight.machine.phase {
            case .loading, .retrying: active[flight.run.key, default: 0] += 1; running += 1
            case .queued where !state.table.isDraining(flight.run.id):
                queued[flight.run.key, default: 0] += 1
                depth[flight.run.key] = flight.action.queueDepth
            default: break
            }
        }
        for (key, count) in active where count > 1 { violate("key \(key) has \(count) runs loading or retrying") }
        for (key, count) in queued where count > 1 + depth[key, default: 1] {
            violate("key \(key) has \(count) runs queued (its holder and a line of \(depth[key, default: 1]) at most)")
        }
        for (key, most) in depth where state.table.line(of: key).count > most {
            violate("key \(key) has \(state.table.line(of: key).count) runs waiting in line, over its depth \(most)")
        }
        if running > state.table.limit { violate("\(running) runs loading or retrying, over the limit \(state.table.limit)") }
        checkLocks(running: running)
    }

    /// No lock is held by more runs than its limit (counted from the runs loading or retrying),
    /// and no run waits while its locks are free: a run ready to start (its key free, its
    /// creation durable) that is not running, while a start slot is free, waits for a lock that
    /// is full, counting the older runs waiting for it.
    private mutating func checkLocks(running: Int) {
        var holding: [String: [Int64]] = [:]
        for flight in state.flights.values where flight.machine.phase == .loading || flight.machine.phase == .retrying {
            for lock in flight.action.locks { holding[lock.name, default: []].append(flight.run.id) }
        }
        for (lock, runs) in holding {
            let limit = Self.actions.flatMap(\.locks).first { $0.name == lock }?.limit ?? 1
            if runs.count > limit { violate("lock \(lock) is held by \(runs.count) runs (\(runs.sorted())), over its limit \(limit)") }
        }
        if holding.mapValues({ Set($0) }) != state.locksHeld.mapValues({ Set($0) }) {
            violate("the runs loading hold \(holding), but the table says \(state.locksHeld)")
        }
        guard state.mode == .accepting, running < state.table.limit else { return }
        let waiters = state.table.locks.waiting
        for flight in state.flights.values where state.table.stage(of: flight.run.id) == .ready {
            let id = flight.run.id
            guard let position = waiters.firstIndex(of: id) else {
                violate("run \(id) is ready, a start slot is free (\(running) of \(state.table.limit)) and it waits for no lock, but it has not started")
                continue
            }
            let older = waiters[..<position].compactMap { state.flights[$0]?.action.locks }
            let full = flight.action.locks.first { lock in
                holding[lock.name, default: []].count + older.filter { $0.contains { $0.name == lock.name } }.count >= lock.limit
            }
            if full == nil { violate("run \(id) waits for its locks \(flight.action.locks.map(\.name)) while they are free (held: \(holding))") }
            if state.snapshot(of: id)?.waiting?.lock != full?.name {
                violate("run \(id) says it waits for \(String(describing: state.snapshot(of: id)?.waiting)), not lock \(String(describing: full?.name))")
            }
        }
    }

    /// No run starts inside a cooldown window of its key unless forced, or created before the
    /// success that opened the window (a follow-up: its trigger asked for a run after it came).
    private mutating func checkCooldown(_ launch: Launch) {
        guard launch.attempt == 1, let created = createdAt[launch.run], let cooldown = created.action.cooldown,
              let success = lastSuccess[created.key], now - success < cooldown,
              createdStep[launch.run, default: 0] >= successStep[created.key, default: 0], !forced.contains(launch.run) else { return }
        violate("run \(launch.run) of key \(created.key) started inside its cooldown (success at \(success.rawValue), now \(now.rawValue)), unforced")
    }

    /// No more runs of a rate-limited bucket (a key, or the action) start in any window of its
    /// `per` than its `runs`: counted at each first attempt's launch.
    private mutating func checkRate(_ launch: Launch) {
        guard launch.attempt == 1, let key = state.snapshot(of: launch.run)?.key, let claim = launch.action.rateClaim(key: key) else { return }
        let recent = rateStarts[claim.bucket, default: []].filter { now - $0 < claim.limit.per }
        if recent.count >= claim.limit.runs {
            violate("run \(launch.run) of \(claim.bucket) started at \(now.rawValue), start \(recent.count + 1) inside \(claim.limit.text) (\(recent.map(\.rawValue)))")
        }
        rateStarts[claim.bucket] = recent + [now]
    }

    /// No run of a debounced key starts before its window elapsed: the window after the last
    /// trigger recorded against it, or `maxWait` after its creation, whichever is first.
    private mutating func checkDebounce(_ launch: Launch) {
        guard launch.attempt == 1, let burst = bursts[launch.run], let window = burst.action.debounce,
              let maxWait = burst.action.debounceMaxWait else { return }
        unpend(launch.run)
        let due = min(burst.last + window, burst.first + maxWait)
        if now < due { violate("run \(launch.run) of a debounced key started at \(now.rawValue), before its window ended at \(due.rawValue)") }
    }

    /// Every debounced trigger is answered by exactly one run: the pending run of its key when it
    /// found one (never busy then), else a run of its key (or an error).
    private mutating func checkDebounced(_ token: ConductorState.Token, _ ask: (key: String, pending: Int64?),
                                         _ effect: ConductorState.Effect) {
        guard case let .answer(_, answer) = effect else { return }
        switch answer {
        case let .ticket(decision, run):
            if run.key != ask.key { violate("debounced trigger \(token) of key \(ask.key) was answered with run \(run.id) of key \(run.key)") }
            if let pending = ask.pending, decision.run != pending || run.id != pending {
                violate("debounced trigger \(token) found run \(pending) pending but was answered with \(decision)")
            }
        case .failed(.busy):
            if let pending = ask.pending { violate("debounced trigger \(token) was refused busy while run \(pending) was pending") }
        default:
            break
        }
    }

    private mutating func unpend(_ run: Int64) {
        if let key = bursts[run] != nil ? pendingRun.first(where: { $0.value == run })?.key : nil { pendingRun[key] = nil }
    }

    /// A hook fires exactly once per qualifying outcome, in the item of the end: each end of a
    /// run whose action has hooks (a hook's own run only with `chain`) brings, for each of
    /// failure, success and change (against the key's previous outcome, as this walk keeps it)
    /// that it qualifies for, either the hook's new run or one record of its trigger against a
    /// run of the hook's action — and nothing fires for any other end, or twice.
    private mutating func checkHooks(_ entries: [JournalEntry], _ event: ConductorState.Event) {
        for case let .created(run, _) in entries {
            let action = if case let .trigger(_, trigger) = event, trigger.action.name == run.action { trigger.action }
                else { Self.hookActions[run.action] ?? Action(name: run.action) }
            runAction[run.id] = (action, run.key)
            if let cause = run.hook { hookCause[run.id] = cause }
        }
        if state.storeDecidesHooks { return checkFirings(entries) }
        var expected: [String: String] = [:]
        for case let .transition(transition) in entries where transition.to == .success || transition.to == .failure {
            guard let (action, key) = runAction[transition.runID], !action.hooks.isEmpty else { continue }
            let previous = lastOutcome[key]
            if action.hooks.targets[.change] != nil { lastOutcome[key] = transition.to }
            if hookCause[transition.runID] != nil, !action.hooks.chain { continue }
            var events: [HookEvent] = [transition.to == .success ? .success : .failure]
            if let previous, previous != transition.to { events.append(.change) }
            for event in events { if let target = action.hooks.targets[event] { expected["\(transition.runID) \(event)"] = target.action.name } }
        }
        var unmade = expected
        for case let .created(run, _) in entries {
            guard let cause = run.hook else { continue }
            let pair = "\(cause.run) \(cause.event)"
            if !fired.insert(pair).inserted { violate("the \(pair) hook fired twice (run \(run.id))") }
            if unmade.removeValue(forKey: pair) == nil { violate("run \(run.id) was made by the \(pair) hook, which no end in its item fires") }
        }
        var records: [String: Int] = [:]
        if case .trigger = event {} else { for case let .trigger(record) in entries { records[record.action, default: 0] += 1 } }
        for (pair, target) in unmade { fired.insert(pair); records[target, default: 0] -= 1 }
        for (target, count) in records where count != 0 {
            violate("hooks of \(target): \(count > 0 ? "\(count) trigger records too many" : "\(-count) hooks fired nothing") in one end's item")
        }
    }

    /// Where the store decides hooks (a fleet): each end that can fire (a success or failure of a
    /// run whose action has hooks; a hook's own run only with `chain`) brings one firing of that
    /// run in its item, no other end brings one, and the state makes no hook run itself.
    private mutating func checkFirings(_ entries: [JournalEntry]) {
        var expected: Set<Int64> = []
        for case let .transition(transition) in entries where transition.to == .success || transition.to == .failure {
            guard let (action, _) = runAction[transition.runID], !action.hooks.isEmpty,
                  hookCause[transition.runID] == nil || action.hooks.chain else { continue }
            expected.insert(transition.runID)
        }
        for entry in entries {
            if case let .created(run, _) = entry, run.hook != nil { violate("run \(run.id) was made by a hook the store decides") }
            if case let .hooks(firing) = entry, expected.remove(firing.run.id) == nil {
                violate("run \(firing.run.id)'s hooks fired twice, or in an item without its end")
            }
        }
        for id in expected.sorted() { violate("run \(id)'s end left its hooks out of its item") }
    }

    /// Every action a hook may trigger, by name.
    static let hookActions: [String: Action] = {
        var all: [String: Action] = [:]
        func add(_ action: Action) {
            all[action.name] = action
            for target in action.hooks.targets.values { add(target.action) }
            for need in action.needs { add(need.action) }
        }
        for action in actions { add(action) }
        return all
    }()

    private mutating func violate(_ message: String) {
        if violations.count < 20 { violations.append("step \(steps): \(message)") }
    }
}

/// SplitMix64 as a `Choices` source: a seed replays a walk exactly.
struct SeededChoices: ConductorWalk.Choices {
    private var generator: SplitMix
    private var left: Int

    init(seed: UInt64, budget: Int) {
        generator = SplitMix(seed: seed)
        left = budget
    }

    mutating func next(_ n: Int) -> Int? {
        guard left > 0, n > 0 else { return nil }
        left -= 1
        return min(Int(generator.unit() * Double(n)), n - 1)
    }
}

extension ConductorWalk {
    /// Needs, as written: the relation in the item that creates its run; each end decided; a run
    /// that ends for its needs never started.
    fileprivate mutating func checkNeeds(_ entries: [JournalEntry]) {
        for case let .needs(id, needed) in entries {
            needsOf[id] = needed.map(\.run)
            let withItsRun = entries.contains { if case let .created(run, _) = $0 { run.id == id } else { false } }
            if !withItsRun { violate("run \(id)'s needs were written apart from its creation") }
        }
        for case let .transition(transition) in entries where transition.to.isTerminal {
            decidedEnd[transition.runID] = transition.to
            if transition.detail.reason == "needs", launchedRuns.contains(transition.runID) {
                violate("run \(transition.runID) ended for its needs (\(transition.detail.error ?? "")) after it started")
            }
        }
    }

    /// What a start must respect, checked where it is decided (its `loading` written): the process
    /// itself starts once that is durable, by which time a pause or a success may have come.
    fileprivate mutating func checkStart(_ launch: Launch, paused: Set<String>) {
        checkCooldown(launch)
        checkDebounce(launch)
        checkRate(launch)
        checkNeeds(launch)
        if launch.attempt == 1, launch.action.approve != nil, approvalDecided[launch.run] != .approved, approvalDecided[launch.run] != .waived {
            violate("run \(launch.run) of \(launch.action.name) started without an approval (\(String(describing: approvalDecided[launch.run])))")
        }
        if launch.attempt == 1, paused.contains(launch.action.name) {
            violate("run \(launch.run) of \(launch.action.name) started while its action was paused")
        }
        if launch.attempt == 1, let key = lineKey[launch.run] {
            if let first = lineOrder[key]?.first, first != launch.run {
                violate("run \(launch.run) started before run \(first), ahead of it in the line of key \(key)")
            }
            leaveLine(launch.run)
        }
        if launch.hook?.cause != hookCause[launch.run] {
            violate("run \(launch.run) started told \(String(describing: launch.hook?.cause)), fired by \(String(describing: hookCause[launch.run]))")
        }
    }

    /// A process is launched only for a run still meant to run: never one being stopped (cancel,
    /// timeout, replace) or whose end is decided, but where a stop follows in the same step. In a
    /// drain, a run that may outlive batond is asked to be handed over as soon as it launches (its
    /// start was being written when the shutdown began), not left to hold the exit and be killed.
    private mutating func checkLaunchWanted(_ launch: Launch, _ effects: [ConductorState.Effect]) {
        guard let flight = state.flights[launch.run] else { return violate("run \(launch.run) launched, not in flight") }
        let stopped = effects.contains { if case .stop(launch.run, _) = $0 { true } else { false } }
        if flight.machine.stopping != nil || decidedEnd[launch.run] != nil, !stopped {
            violate("run \(launch.run) launched attempt \(launch.attempt) while being stopped or ended (\(String(describing: decidedEnd[launch.run])))")
        }
        if shutDown, state.handsOver, launch.surviving == nil, flight.machine.stopping == nil, flight.action.mayOutliveBatond, flight.hook == nil,
           !effects.contains(.handOver(run: launch.run, attempt: launch.attempt)) {
            violate("run \(launch.run) launched attempt \(launch.attempt) during the drain and was never asked to be handed over")
        }
    }

    /// Never a run started before every run it needs succeeded (and so never one whose need failed).
    fileprivate mutating func checkNeeds(_ launch: Launch) {
        guard launch.attempt == 1 else { return }
        launchedRuns.insert(launch.run)
        for needed in needsOf[launch.run] ?? [] where decidedEnd[needed] != .success {
            violate("run \(launch.run) started while run \(needed), which it needs, is \(decidedEnd[needed].map(\.rawValue) ?? "not ended")")
        }
    }
}
