@testable import BatonCore
@testable import BatonEngine
import Testing

/// Rate limits (issue 40, item 3) in the conductor's state: starts counted per key or per action;
/// over the limit a trigger is refused and recorded against no run (`over: reject`), or its run
/// waits queued until a start fits (`over: delay`); the starts the history kept count after a
/// restart, and a run recovery queues again waits for them too.
@Suite("Conductor: rate limits")
struct ConductorRateTests {
    typealias Rig = ConductorDebounceTests.Rig

    static func action(_ limit: RateLimit, keyed: Bool = false) -> Action {
        var action = Action(name: "deploy", exec: ["true"], policy: .reject, params: keyed ? ["env": ParamSpec()] : [:],
                            keyParams: keyed ? ["env"] : [])
        action.rateLimit = limit
        return action
    }

    static func trigger(_ rig: inout Rig, _ action: Action, env: String, at seconds: Double) -> ConductorState.Token {
        rig.at(seconds)
        rig.token += 1
        let params = ["env": env]
        rig.handle(.trigger(rig.token, Trigger(action: action, key: action.key(for: params), policy: action.policy, params: params, peer: nil)))
        return rig.token
    }

    @Test("over: reject: the third trigger in the window is refused rate_limited with when the next run may start, recorded, and nothing runs; once the first start leaves the window a run starts")
    func reject() {
        let deploy = Self.action(RateLimit(runs: 2, per: .seconds(60)))
        var rig = Rig()
        rig.trigger(deploy, at: 0)
        rig.exit(1, at: 1)
        rig.trigger(deploy, at: 2)
        rig.exit(2, at: 3)
        let refused = rig.trigger(deploy, at: 4)
        let limit = RateLimit(runs: 2, per: .seconds(60))
        #expect(rig.answers[refused] == .failed(.rateLimited(action: "deploy", limit: limit, next: Rig.start + .seconds(60))))
        #expect(rig.records == [.rateLimited] && rig.launched == [1, 2])
        #expect(BatonError.rateLimited(action: "deploy", limit: limit, next: Rig.start + .seconds(60)).message(at: rig.now)
            == "deploy is rate limited: at most 2 runs per 1m00s per key; the next run may start in 56s")
        #expect(rig.state.rateLeft(deploy, key: "deploy", at: rig.now)! == (0, Rig.start + .seconds(60)))
        let later = rig.trigger(deploy, at: 60)
        #expect(rig.decision(later) == .created(3) && rig.launched == [1, 2, 3])
        #expect(rig.state.rateLeft(deploy, key: "deploy", at: rig.now)!.left == 0, "runs 2 (at 2s) and 3 (at 60s) are in the window")
    }

    @Test("scope key counts each key apart; scope action counts every key of the action together")
    func scopes() {
        var rig = Rig()
        let perKey = Self.action(RateLimit(runs: 1, per: .seconds(10)), keyed: true)
        _ = Self.trigger(&rig, perKey, env: "a", at: 0)
        rig.exit(1, at: 0.5)
        let b = Self.trigger(&rig, perKey, env: "b", at: 1)
        #expect(rig.decision(b) == .created(2), "another key has its own count")
        rig.exit(2, at: 1.5)
        let a = Self.trigger(&rig, perKey, env: "a", at: 2)
        #expect(rig.answers[a] == .failed(.rateLimited(action: "deploy", limit: perKey.rateLimit!, next: Rig.start + .seconds(10))))

        var whole = Rig()
        let perAction = Self.action(RateLimit(runs: 1, per: .seconds(10), scope: .action), keyed: true)
        _ = Self.trigger(&whole, perAction, env: "a", at: 0)
        let other = Self.trigger(&whole, perAction, env: "b", at: 1)
        #expect(whole.answers[other] == .failed(.rateLimited(action: "deploy", limit: perAction.rateLimit!, next: Rig.start + .seconds(10))))
    }

    @Test("over: delay: a run over the limit is made and answered, waits queued with its start time, and starts when the window lets it; two waiting runs start a window apart")
    func delay() {
        var rig = Rig()
        let sync = Self.action(RateLimit(runs: 1, per: .seconds(10), scope: .action, over: .delay), keyed: true)
        _ = Self.trigger(&rig, sync, env: "a", at: 0)
        let b = Self.trigger(&rig, sync, env: "b", at: 1)
        let c = Self.trigger(&rig, sync, env: "c", at: 2)
        #expect(rig.decision(b) == .created(2) && rig.decision(c) == .created(3) && rig.launched == [1])
        #expect(rig.state.snapshot(of: 2)?.rateUntil == Rig.start + .seconds(10))
        #expect(rig.state.snapshot(of: 3)?.rateUntil == Rig.start + .seconds(20), "behind run 2: a window later")
        rig.at(9.999)
        #expect(rig.launched == [1])
        rig.at(10)
        #expect(rig.launched == [1, 2], "one start fits at 10s: run 2, the older")
        #expect(rig.state.snapshot(of: 2)?.rateUntil == nil && rig.state.snapshot(of: 3)?.rateUntil == Rig.start + .seconds(20))
        rig.at(19.9)
        #expect(rig.launched == [1, 2])
        rig.at(20)
        #expect(rig.launched == [1, 2, 3])
        #expect(rig.records.isEmpty, "a delayed run is a creation, not a refusal")
    }

    @Test("a restart keeps counting: the starts the history kept fill the window, and a run recovery queues again waits for it")
    func remembered() {
        let deploy = Self.action(RateLimit(runs: 1, per: .seconds(60)))
        var rig = Rig()
        var started = RunSnapshot(id: 7, action: "deploy", key: "deploy", phase: .success, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Rig.start + .seconds(-31))
        started.startedAt = Rig.start + .seconds(-30)
        rig.state.remember(starts: [started], actions: ["deploy": deploy])
        let refused = rig.trigger(deploy, at: 0)
        #expect(rig.answers[refused] == .failed(.rateLimited(action: "deploy", limit: deploy.rateLimit!, next: Rig.start + .seconds(30))))

        var delayed = deploy
        delayed.rateLimit?.over = .delay
        var restarted = Rig()
        restarted.state.remember(starts: [started], actions: ["deploy": delayed])
        let queued = RunSnapshot(id: 8, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                 queuedAt: Rig.start + .seconds(-5))
        restarted.handle(.recover(1, [RecoveredRun(UnfinishedRun(run: queued, lastSeq: 1), action: delayed)]))
        #expect(restarted.launched.isEmpty && restarted.state.snapshot(of: 8)?.rateUntil == Rig.start + .seconds(30))
        restarted.at(30)
        #expect(restarted.launched == [8])
    }

    @Test("a run a crash interrupted, taken back to run again (onInterrupt: restart), is not held back by its own start")
    func restartedRunNotHeldByItsOwnStart() {
        var deploy = Self.action(RateLimit(runs: 1, per: .seconds(3_600)))
        deploy.onInterrupt = .restart
        var loading = RunSnapshot(id: 9, action: "deploy", key: "deploy", phase: .loading, policy: .reject, params: [:], trigger: nil,
                                  queuedAt: Rig.start + .seconds(-61))
        loading.startedAt = Rig.start + .seconds(-60)
        var rig = Rig()
        // The history's seed holds its start: the window is full with it.
        rig.state.remember(starts: [loading], actions: ["deploy": deploy])
        rig.handle(.recover(1, [RecoveredRun(UnfinishedRun(run: loading, lastSeq: 2), action: deploy)]))
        #expect(rig.launched == [9], "it runs again now, its start counted once")
        #expect(rig.state.rateLeft(deploy, key: "deploy", at: Rig.start)?.left == 0)
    }
}

extension ConductorRateTests {
    @Test("a hook's trigger over its action's rate limit is recorded as rate limited against no run, and runs nothing")
    func hook() {
        var notify = Action(name: "notify", exec: ["true"], policy: .reject)
        notify.rateLimit = RateLimit(runs: 1, per: .seconds(60))
        var deploy = Action(name: "deploy", exec: ["true"], policy: .reject)
        deploy.hooks.targets = [.success: HookTarget(action: notify, params: [:])]
        var rig = Rig()
        rig.trigger(deploy, at: 0)
        rig.exit(1, at: 1)
        rig.exit(2, at: 2)
        rig.trigger(deploy, at: 3)
        rig.exit(3, at: 4)
        #expect(rig.launched == [1, 2, 3], "deploy 1, its hook's notify 2, deploy 3; no second notify")
        #expect(rig.records == [.rateLimited])
        let record = rig.written.compactMap { if case let .trigger(record) = $0 { record } else { nil } }.first
        #expect(record?.action == "notify" && record?.runID == nil)
    }
}

extension ConductorRateTests {
    @Test("RateBook: a start fits while fewer than runs are in the window; behind waiting runs, each a window after the start it replaces; old buckets are swept")
    func book() {
        let claim = RateClaim(bucket: "key k", limit: RateLimit(runs: 2, per: .seconds(10)))
        let t = Rig.start
        var book = RateBook()
        #expect(book.next(claim, at: t) == nil)
        #expect(book.next(claim, at: t, waiting: 2) == t + .seconds(10), "waiting runs alone fill it: a window from now")
        book.record(claim, at: t)
        book.record(claim, at: t + .seconds(4))
        #expect(book.next(claim, at: t + .seconds(5)) == t + .seconds(10))
        #expect(book.next(claim, at: t + .seconds(5), waiting: 1) == t + .seconds(14))
        #expect(book.next(claim, at: t + .seconds(5), waiting: 2) == t + .seconds(20))
        #expect(book.next(claim, at: t + .seconds(10)) == nil, "exactly a window after the first start, it has left")
        #expect(book.next(claim, at: t + .seconds(-5)) == t + .seconds(10), "starts after now (a clock stepped back) still count")
        for index in 0..<RateBook.sweepEvery {
            book.record(RateClaim(bucket: "key once \(index)", limit: claim.limit), at: t + .seconds(60))
        }
        #expect(book.starts["key k"] == nil && book.starts.count == RateBook.sweepEvery, "the bucket whose starts all left was swept")
        // A long window with a crowd waiting: bounded, never past what a timestamp holds.
        let yearly = RateClaim(bucket: "action a", limit: RateLimit(runs: 1, per: .seconds(366 * 86_400)))
        var crowded = RateBook()
        crowded.record(yearly, at: t)
        #expect(crowded.next(yearly, at: t, waiting: Int(Int32.max)) == t + yearly.limit.per * RateBook.furthestWindows)
    }
}
