@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

/// `locks` between actions: runs holding a common lock never overlap (beyond its limit); a run
/// whose locks are not all free waits `queued`, first in first out, and takes them all at once.
@Suite("Conductor state: locks between actions")
struct ConductorLockTests {
    static func action(_ name: String, _ locks: [String], limits: [String: Int] = [:], policy: Policy = .reject,
                       timeout: Duration? = nil, retry: RetryPolicy = .none) -> Action {
        var action = Action(name: name, exec: ["x"], timeout: timeout, policy: policy, policies: Set(Policy.allCases), retry: retry)
        action.locks = locks.map { LockClaim($0, limit: limits[$0] ?? 1) }
        return action
    }

    /// A conductor whose store commits every write at once, and which remembers what it launched.
    struct Rig {
        var state: ConductorState
        var now = Timestamp(rawValue: 1_000_000)
        var launched: [Int64] = []
        var answers: [ConductorState.Token: ConductorState.Answer] = [:]
        var written: [JournalEntry] = []
        var published: [RunUpdate] = []
        var token: ConductorState.Token = 0

        init(maxConcurrentRuns: Int = 8) { state = ConductorState(maxConcurrentRuns: maxConcurrentRuns, seed: 1) }

        /// Handles an event, committing each write as it comes (and what those cause), in order.
        mutating func handle(_ event: ConductorState.Event) {
            now = now + .milliseconds(1)
            var queue = state.handle(event, at: now)
            while !queue.isEmpty {
                let effect = queue.removeFirst()
                switch effect {
                case let .write(entries, id):
                    written += entries
                    queue += state.handle(.committed(id, nil), at: now)
                case let .launch(launch): launched.append(launch.run)
                case let .answer(token, answer): answers[token] = answer
                case let .publish(update): published.append(update)
                default: break
                }
            }
        }

        @discardableResult
        mutating func trigger(_ action: Action, policy: Policy? = nil) -> ConductorState.Answer? {
            token += 1
            handle(.trigger(token, Trigger(action: action, key: action.name, policy: policy ?? action.policy, params: [:], peer: nil)))
            return answers[token]
        }

        mutating func exit(_ run: Int64, status: Int32 = 0, attempt: Int = 1) {
            handle(.exited(run: run, attempt: attempt, AttemptOutcome(result: .exited(status: status))))
        }

        func phase(_ run: Int64) -> Phase? { state.snapshot(of: run)?.phase }
        var waiting: [Int64] { state.inFlight.filter { $0.waiting != nil }.map(\.id) }
    }

    @Test("a hook's run takes its action's locks like any run: it waits while another action holds one")
    func hookRunTakesLocks() {
        var rig = Rig()
        let page = Self.action("page", ["db"])
        var deploy = Self.action("deploy", [])
        deploy.hooks.targets[.failure] = HookTarget(action: page, params: [:])
        rig.trigger(Self.action("migrate", ["db"]))
        rig.trigger(deploy)
        #expect(rig.launched == [1, 2])
        rig.exit(2, status: 1)
        #expect(rig.launched == [1, 2] && rig.phase(3) == .queued && rig.waiting == [3],
                "the failure hook's run must wait for lock db, held by migrate run 1")
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock db, held by migrate run 1")
        rig.exit(1)
        #expect(rig.launched == [1, 2, 3] && rig.state.locksHeld == ["db": [3]])
    }

    @Test("runs of actions sharing a lock start one at a time, first in first out, and the waiters say whom they wait for")
    func fifo() {
        var rig = Rig()
        let (migrate, backup, report) = (Self.action("migrate", ["db"]), Self.action("backup", ["db"]), Self.action("report", ["db"]))
        rig.trigger(migrate)
        rig.trigger(backup)
        rig.trigger(report)
        #expect(rig.launched == [1] && rig.phase(2) == .queued && rig.phase(3) == .queued)
        #expect(rig.state.snapshot(of: 2)?.waiting?.text == "waiting for lock db, held by migrate run 1")
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock db, held by migrate run 1")
        #expect(rig.state.snapshot(of: 1)?.waiting == nil)
        let queued = rig.published.filter { $0.transition?.to == .queued }
        #expect(queued.map(\.run.id) == [1, 2, 3])
        #expect(queued.map { $0.run.waiting?.lock } == [nil, "db", "db"], "watchers hear the wait with the queued transition")
        rig.exit(1)
        #expect(rig.launched == [1, 2] && rig.waiting == [3])
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock db, held by backup run 2")
        rig.exit(2)
        #expect(rig.launched == [1, 2, 3] && rig.waiting.isEmpty && rig.state.locksHeld == ["db": [3]])
        rig.exit(3)
        #expect(rig.state.locksHeld.isEmpty)
    }

    @Test("a run takes all its locks at once: it waits holding none, and a younger run wanting one of them waits behind it")
    func allAtOnce() {
        var rig = Rig()
        let a = Self.action("a", ["x"]), b = Self.action("b", ["y"]), both = Self.action("both", ["x", "y"]), other = Self.action("other", ["z"])
        rig.trigger(a)
        rig.trigger(both)
        #expect(rig.state.locksHeld == ["x": [1]], "the waiter takes y only with x")
        rig.trigger(b)
        #expect(rig.launched == [1] && rig.waiting == [2, 3])
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock y, behind both run 2")
        rig.trigger(other)
        #expect(rig.launched == [1, 4], "a run whose locks nobody waits for passes")
        rig.exit(1)
        #expect(rig.launched == [1, 4, 2] && rig.state.locksHeld["x"] == [2] && rig.state.locksHeld["y"] == [2])
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock y, held by both run 2")
        rig.exit(2)
        #expect(rig.launched == [1, 4, 2, 3])
    }

    @Test("limits make a lock a semaphore: that many runs hold it at once, the next waits for one of them",
          arguments: [1, 2, 3])
    func semaphore(limit: Int) {
        var rig = Rig()
        let actions = (0...limit).map { Self.action("io\($0)", ["heavy-io"], limits: ["heavy-io": limit]) }
        for action in actions { rig.trigger(action) }
        #expect(rig.launched == (1...Int64(limit)).map { $0 })
        let holders = (1...limit).map { "io\($0 - 1) run \($0)" }.joined(separator: ", ")
        let limitText = limit > 1 ? " (\(limit) at once)" : ""
        #expect(rig.state.snapshot(of: Int64(limit + 1))?.waiting?.text == "waiting for lock heavy-io\(limitText), held by \(holders)")
        rig.exit(Int64(limit))
        #expect(rig.launched.last == Int64(limit + 1) && rig.state.locksHeld["heavy-io"]?.count == limit)
    }

    @Test("cancelling a run that waits for a lock ends it at once and frees its place: the run behind it goes")
    func cancelWhileWaiting() {
        var rig = Rig()
        let a = Self.action("a", ["x"]), b = Self.action("b", ["y"]), both = Self.action("both", ["x", "y"])
        rig.trigger(a)
        rig.trigger(both)
        rig.trigger(b)
        #expect(rig.launched == [1])
        rig.token += 1
        rig.handle(.cancel(rig.token, .run(2), by: 1000))
        #expect(rig.written.contains { if case let .transition(t) = $0 { t.runID == 2 && t.to == .cancelled } else { false } })
        #expect(rig.launched == [1, 3] && rig.phase(2) == nil && rig.waiting.isEmpty)
    }

    enum End: String, CaseIterable { case success, failure, cancel, timeout, replace, retried }

    @Test("a lock is held until its run's processes are gone, however it ends, and then handed to the next waiter",
          arguments: End.allCases)
    func releasedOnEveryEnd(end: End) {
        var rig = Rig()
        let holder = Self.action("holder", ["db"], timeout: .seconds(5), retry: end == .retried ? RetryPolicy(attempts: 1) : .none)
        let waiter = Self.action("waiter", ["db"])
        rig.trigger(holder)
        rig.trigger(waiter)
        var stopped: Int64 = 1
        switch end {
        case .success: rig.exit(1)
        case .failure: rig.exit(1, status: 1)
        case .cancel:
            rig.token += 1
            rig.handle(.cancel(rig.token, .run(1), by: 0))
        case .timeout: rig.handle(.timer(run: 1, .timeout))
        case .replace:
            rig.trigger(holder, policy: .replace)
            stopped = 1
        case .retried:
            rig.exit(1, status: 1)
            #expect(rig.phase(1) == .retrying && rig.launched == [1], "a run keeps its lock between attempts")
            rig.handle(.timer(run: 1, .backoff(1)))
            rig.exit(1, status: 1, attempt: 2)
        }
        if end == .cancel || end == .timeout || end == .replace {
            #expect(rig.launched == [1], "stopping is not gone: the lock is still held")
            rig.exit(stopped, status: 143)
        }
        #expect(rig.launched == (end == .retried ? [1, 1, 2] : [1, 2]), "the waiter starts once the holder is gone")
        #expect(rig.state.locksHeld["db"] == [2])
        if end == .replace {
            #expect(rig.waiting == [3] && rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock db, held by waiter run 2")
        }
    }

    @Test("single-flight policies meet a run waiting for a lock as they meet any queued run")
    func policiesWhileWaiting() throws {
        var rig = Rig()
        let migrate = Self.action("migrate", ["db"]), backup = Self.action("backup", ["db"])
        rig.trigger(migrate)
        rig.trigger(backup)
        let rejected = rig.trigger(backup, policy: .reject)
        guard case let .failed(.busy(run, _, phase, _, _)) = try #require(rejected) else {
            Issue.record("reject: expected busy")
            return
        }
        #expect(run == 2 && phase == .queued)
        rig.trigger(backup, policy: .join)
        guard case let .ticket(.joined(2), joined) = try #require(rig.answers[rig.token]) else {
            Issue.record("join: expected joined run 2, got \(String(describing: rig.answers[rig.token]))")
            return
        }
        #expect(joined.waiting?.text == "waiting for lock db, held by migrate run 1", "the answer says what the run waits for")
        rig.trigger(backup, policy: .queue)
        #expect(rig.phase(3) == .queued && rig.waiting == [2], "a follow-up waits for its key first")
        rig.trigger(backup, policy: .replace)
        #expect(rig.phase(2) == nil && rig.phase(3) == nil && rig.waiting == [4], "replace cancels both queued runs at once")
        rig.exit(1)
        #expect(rig.launched == [1, 4])
    }

    @Test("maxConcurrentRuns and locks: a run waiting for a lock takes no start slot, and starts before younger runs when both free")
    func startSlots() {
        var rig = Rig(maxConcurrentRuns: 2)
        let a = Self.action("a", ["x"]), b = Self.action("b", ["x"]), free1 = Self.action("free1", []), free2 = Self.action("free2", [])
        rig.trigger(a)
        rig.trigger(b)
        rig.trigger(free1)
        #expect(rig.launched == [1, 3], "the waiter for x does not hold a slot")
        rig.trigger(free2)
        #expect(rig.launched == [1, 3] && rig.state.snapshot(of: 4)?.waiting == nil, "free2 waits for a start slot, not a lock")
        rig.exit(1)
        #expect(rig.launched == [1, 3, 2], "the older waiter goes first")
        rig.exit(3)
        #expect(rig.launched == [1, 3, 2, 4])
    }

    @Test("the first loading of a run records the locks it took; later attempts and lockless runs record none")
    func detail() {
        var rig = Rig()
        rig.trigger(Self.action("migrate", ["db", "io"], retry: RetryPolicy(attempts: 1)))
        rig.trigger(Self.action("plain", []))
        let loadings = rig.written.compactMap { if case let .transition(t) = $0, t.to == .loading { t } else { nil } }
        #expect(loadings.map(\.detail.locks) == [["db", "io"], nil])
        rig.exit(1, status: 1)
        rig.handle(.timer(run: 1, .backoff(1)))
        let second = rig.written.compactMap { if case let .transition(t) = $0, t.to == .loading, t.runID == 1, t.detail.attempt == 2 { t } else { nil } }
        #expect(second.count == 1 && second.first?.detail.locks == nil)
    }

    @Test("a reload: runs keep the locks and limits they were triggered with; a trigger after it claims the new ones")
    func reload() {
        var rig = Rig()
        let before = Self.action("scan", ["io"], limits: ["io": 2]), other = Self.action("index", ["io"], limits: ["io": 2])
        rig.trigger(before)
        rig.trigger(other)
        #expect(rig.launched == [1, 2])
        // The config now says io is held by one run at a time, and scan holds db too.
        let after = Self.action("report", ["io"], limits: ["io": 1]), scanAfter = Self.action("scan", ["io", "db"])
        rig.trigger(after)
        rig.exit(1)
        #expect(rig.launched == [1, 2], "one holder left is one too many under the new limit")
        #expect(rig.state.snapshot(of: 3)?.waiting?.text == "waiting for lock io, held by index run 2")
        rig.trigger(scanAfter)
        rig.exit(2)
        #expect(rig.launched == [1, 2, 3] && rig.waiting == [4], "first in first out under the new limit")
        rig.exit(3)
        #expect(rig.launched == [1, 2, 3, 4] && rig.state.locksHeld == ["io": [4], "db": [4]])
    }

    @Test("recovery queues runs again under their actions' locks: one starts, the other waits for it")
    func recovery() {
        var rig = Rig()
        let migrate = Self.action("migrate", ["db"]), backup = Self.action("backup", ["db"])
        let runs = [(Int64(7), migrate), (Int64(8), backup)].map { id, action in
            RecoveredRun(UnfinishedRun(run: RunSnapshot(id: id, action: action.name, key: action.name, phase: .queued, policy: .reject,
                                                        params: [:], trigger: nil, queuedAt: .init(rawValue: 1)), lastSeq: 1),
                         action: action)
        }
        rig.token += 1
        rig.handle(.recover(rig.token, runs))
        #expect(rig.launched == [7] && rig.state.snapshot(of: 8)?.waiting?.text == "waiting for lock db, held by migrate run 7")
        rig.exit(7)
        #expect(rig.launched == [7, 8])
    }
}

@Suite("Locks in metrics and on the wire")
struct LockMetricsTests {
    @Test("actions and status describe an action's locks with their limits, and leave the field out for an action with none")
    func actionInfo() throws {
        var action = Action(name: "backup", exec: ["x"])
        #expect(ActionInfo(action).locks == nil)
        action.locks = [LockClaim("db"), LockClaim("heavy-io", limit: 2)]
        let info = ActionInfo(action)
        #expect(info.locks == action.locks)
        // Read back as JSON values: the encoder's key order within an object is not fixed (it
        // differed between the two locks of one line now and then, failing a text comparison).
        var response = Response(id: nil)
        response.actions = [info]
        for line in [try JSONEncoder().encode(info), Data(response.jsonLine())] {
            let object = try JSONSerialization.jsonObject(with: line) as? [String: Any]
            let described = (object?["actions"] as? [[String: Any]])?.first ?? object
            let locks = (described?["locks"] as? [[String: Any]])?.map { "\($0["name"] ?? "?")=\($0["limit"] ?? "?")" }
            #expect(locks == ["db=1", "heavy-io=2"], "\(String(decoding: line, as: UTF8.self))")
        }
    }

    @Test("baton_runs_waiting_for_lock counts the queued runs waiting for each lock, by action, and none that wait for nothing")
    func gauge() {
        func run(_ id: Int64, _ action: String, waiting lock: String?) -> RunSnapshot {
            var run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .queue, params: [:], trigger: nil,
                                  queuedAt: .init(rawValue: 1))
            run.waiting = lock.map { LockWait(lock: $0, limit: 1, holders: [.init(run: 1, action: "migrate")]) }
            return run
        }
        let live = [run(2, "backup", waiting: "db"), run(3, "backup", waiting: "db"), run(4, "scan", waiting: "io"), run(5, "plain", waiting: nil)]
        let text = MetricsReport(counts: Metrics().counts, actions: ["backup", "scan", "plain"], live: live, storeUnavailable: false,
                                 connections: 0, version: "9", process: nil).text
        #expect(text.contains("# TYPE baton_runs_waiting_for_lock gauge"))
        #expect(text.contains(#"baton_runs_waiting_for_lock{action="backup",lock="db"} 2"#))
        #expect(text.contains(#"baton_runs_waiting_for_lock{action="scan",lock="io"} 1"#))
        #expect(!text.contains(#"baton_runs_waiting_for_lock{action="plain""#))
    }
}
