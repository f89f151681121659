@testable import BatonCore
@testable import BatonEngine
import Testing

/// `debounce`: a burst of triggers of a key shares one pending run, which starts once the key has
/// been quiet for the window, or `maxWait` after the burst's first trigger, whichever is first.
@Suite("Conductor state: debounce")
struct ConductorDebounceTests {
    static func action(policy: Policy = .queue, window: Int = 5, maxWait: Int? = nil, cooldown: Int? = nil,
                       locks: [String] = []) -> Action {
        var action = Action(name: "ci", exec: ["x"], policy: policy, policies: Set(Policy.allCases))
        action.debounce = .seconds(window)
        action.maxWait = maxWait.map { .seconds($0) }
        action.cooldown = cooldown.map { .seconds($0) }
        action.locks = locks.map { LockClaim($0, limit: 1) }
        return action
    }

    /// A conductor whose store commits every write at once, whose clock moves only when told, and
    /// whose timers go off when the clock reaches them.
    struct Rig {
        static let start = Timestamp(rawValue: 1_000_000_000)
        var state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        var now = Rig.start
        var timers: [Int64: [ConductorState.Timer: Timestamp]] = [:]
        var launched: [Int64] = []
        var stopped: [Int64] = []
        var closed: [Int64] = []
        var answers: [ConductorState.Token: ConductorState.Answer] = [:]
        var written: [JournalEntry] = []
        var published: [RunUpdate] = []
        var token: ConductorState.Token = 0

        mutating func handle(_ event: ConductorState.Event) {
            var queue = state.handle(event, at: now)
            while !queue.isEmpty {
                switch queue.removeFirst() {
                case let .write(entries, id):
                    written += entries
                    queue += state.handle(.committed(id, nil), at: now)
                case let .launch(launch): launched.append(launch.run)
                case let .stop(run, _): stopped.append(run)
                case let .schedule(run, timer, after): timers[run, default: [:]][timer] = now + after
                case let .cancelTimers(run): timers[run] = nil
                case let .answer(token, answer): answers[token] = answer
                case let .close(run): closed.append(run)
                case let .publish(update): published.append(update)
                default: break
                }
            }
        }

        /// Moves the clock to `seconds` after the start (milliseconds allowed), firing each timer due by then.
        mutating func at(_ seconds: Double) {
            now = Rig.start + .microseconds(Int64(seconds * 1_000_000))
            while let (run, timer) = timers.flatMap({ run, set in set.filter { $0.value <= now }.map { (run, $0.key) } }).first {
                timers[run]?[timer] = nil
                handle(.timer(run: run, timer))
            }
        }

        @discardableResult
        mutating func trigger(_ action: Action, at seconds: Double, policy: Policy? = nil) -> ConductorState.Token {
            at(seconds)
            token += 1
            handle(.trigger(token, Trigger(action: action, key: action.name, policy: policy ?? action.policy, params: [:], peer: nil)))
            return token
        }

        mutating func exit(_ run: Int64, status: Int32 = 0, at seconds: Double) {
            at(seconds)
            handle(.exited(run: run, attempt: 1, AttemptOutcome(result: .exited(status: status))))
        }

        func decision(_ token: ConductorState.Token) -> FlightTable.Decision? {
            if case let .ticket(decision, _) = answers[token] { decision } else { nil }
        }

        var records: [TriggerRecord.Decision] { written.compactMap { if case let .trigger(record) = $0 { record.decision } else { nil } } }
    }

    @Test("a burst joins one run: the first trigger creates it, the others are recorded as debounced against it")
    func burst() {
        var rig = Rig()
        let tokens = [0, 1, 2].map { rig.trigger(Self.action(), at: Double($0)) }
        #expect(tokens.map(rig.decision) == [.created(1), .joined(1), .joined(1)])
        #expect(rig.records == [.debounced, .debounced] && rig.state.inFlight.map(\.id) == [1])
        rig.at(6.999)
        #expect(rig.launched.isEmpty, "quiet for less than the window since the last trigger")
        rig.at(7)
        #expect(rig.launched == [1])
        rig.exit(1, at: 8)
        #expect(rig.closed == [1] && rig.state.inFlight.isEmpty && rig.launched == [1])
    }

    @Test("each trigger restarts the window; status sees when it ends; the creation records the first deadline")
    func restarts() throws {
        var rig = Rig()
        rig.trigger(Self.action(), at: 0)
        #expect(rig.state.inFlight.first?.debounceUntil == Rig.start + .seconds(5))
        rig.trigger(Self.action(), at: 4)
        #expect(rig.state.inFlight.first?.debounceUntil == Rig.start + .seconds(9))
        guard case let .created(_, transition) = try #require(rig.written.first) else { throw Failed() }
        #expect(transition.detail.debounce == (Rig.start + .seconds(5)).rawValue)
        rig.at(8.9)
        rig.handle(.timer(run: 1, .debounce))
        #expect(rig.launched.isEmpty, "a timer set before the second trigger comes early: it is set again")
        #expect(rig.timers[1]?[.debounce] == Rig.start + .seconds(9))
        rig.at(9)
        #expect(rig.launched == [1] && rig.state.inFlight.first?.debounceUntil == nil)
    }

    @Test("maxWait caps the window from the burst's first trigger; by default it is ten windows")
    func maxWait() {
        var rig = Rig()
        for second in [0, 4, 8] { rig.trigger(Self.action(maxWait: 10), at: Double(second)) }
        rig.at(9.999)
        #expect(rig.launched.isEmpty)
        rig.at(10)
        #expect(rig.launched == [1], "10s after the first trigger, though the last came 2s ago")
        #expect(Self.action().debounceMaxWait == .seconds(50) && Action(name: "x").debounceMaxWait == nil)
        var window = DebounceWindow(window: .seconds(5), maxWait: .seconds(3), first: Rig.start)
        #expect(window.deadline == Rig.start + .seconds(3), "a maxWait shorter than the window wins")
        window.restart(at: Rig.start + .seconds(1))
        #expect(window.deadline == Rig.start + .seconds(3))
    }

    @Test("cancel while pending: the run ends cancelled, its timer is dropped, every sharer hears the end")
    func cancel() {
        var rig = Rig()
        let tokens = [0, 1, 2].map { rig.trigger(Self.action(), at: Double($0)) }
        rig.at(3)
        rig.handle(.cancel(99, .action("ci", key: nil), by: 0))
        guard case let .cancelled(runs) = rig.answers[99] else {
            Issue.record("no cancel answer: \(rig.answers)")
            return
        }
        #expect(runs.map(\.id) == [1] && runs.map(\.phase) == [.cancelled])
        #expect(rig.timers[1] == nil && rig.closed == [1])
        rig.at(60)
        #expect(rig.launched.isEmpty)
        #expect(tokens.allSatisfy { rig.decision($0)?.run == 1 }, "each caller shares run 1, whose end is cancelled")
        rig.trigger(Self.action(), at: 61)
        #expect(rig.decision(rig.token) == .created(2), "the next burst makes a new run")
    }

    @Test("a run of the key loading: queue and replace make a pending run that waits out its window; join and reject answer at once",
          arguments: Policy.allCases)
    func running(policy: Policy) {
        var rig = Rig()
        let action = Self.action(policy: policy)
        rig.trigger(action, at: 0)
        rig.at(5)
        #expect(rig.launched == [1])
        let first = rig.trigger(action, at: 6)
        let second = rig.trigger(action, at: 7)
        switch policy {
        case .join:
            #expect(rig.decision(first) == .joined(1) && rig.decision(second) == .joined(1) && rig.state.inFlight.count == 1)
        case .reject:
            #expect(rig.answers[first] == .failed(.busy(run: 1, action: "ci", phase: .loading, since: Rig.start + .seconds(5))))
            #expect(rig.state.inFlight.count == 1)
        case .queue, .replace:
            let made: FlightTable.Decision = policy == .queue ? .followUp(2, after: 1) : .replaced(2, stopping: [1])
            #expect(rig.decision(first) == made && rig.decision(second) == .joined(2), "the burst shares the pending run 2")
            #expect(rig.stopped == (policy == .replace ? [1] : []), "replace stops the running run when the trigger comes")
            rig.exit(1, at: 8)
            #expect(rig.launched == [1], "its key is free, but it starts 5s after the burst's last trigger")
            rig.at(12)
            #expect(rig.launched == [1, 2])
        }
    }

    @Test("a pending follow-up behind a running run is shared whatever the trigger's policy: the burst has its run, and the run loading is left alone",
          arguments: Policy.allCases)
    func followUpAndPolicy(policy: Policy) {
        var rig = Rig()
        let action = Self.action(policy: .queue)
        rig.trigger(action, at: 0)
        rig.at(5)
        #expect(rig.launched == [1])
        let queued = rig.trigger(action, at: 6)
        #expect(rig.decision(queued) == .followUp(2, after: 1))
        let asked = rig.trigger(action, at: 7, policy: policy)
        #expect(rig.decision(asked) == .joined(2) && rig.records.last == .debounced, "\(String(describing: rig.answers[asked]))")
        #expect(rig.stopped.isEmpty && rig.state.inFlight.count == 2, "the run loading goes on")
    }

    @Test("a gated run's creation is not told as waiting for a lock: it is debouncing, not waiting")
    func gatedIsNotWaiting() {
        var rig = Rig()
        var holder = Self.action(policy: .reject, window: 5, locks: ["db"])
        holder.debounce = nil
        holder.name = "migrate"
        rig.trigger(holder, at: 0)
        #expect(rig.launched == [1])
        rig.trigger(Self.action(locks: ["db"]), at: 1)
        let created = rig.state.inFlight.first { $0.id == 2 }
        #expect(created?.debounceUntil != nil)
        #expect(rig.published.last { $0.run.id == 2 && $0.transition?.to == .queued }?.run.waiting == nil,
                "the queued update of a run in its window says nothing of the lock")
    }

    @Test("a follow-up whose window ended while the run before it loads starts when that run ends")
    func followUpDue() {
        var rig = Rig()
        rig.trigger(Self.action(), at: 0)
        rig.at(5)
        rig.trigger(Self.action(), at: 6)
        rig.at(20)
        #expect(rig.launched == [1])
        rig.exit(1, at: 30)
        #expect(rig.launched == [1, 2])
    }

    @Test("cooldown: a trigger inside it runs nothing; after it a burst makes a pending run; a trigger in the window of a pending run joins it")
    func cooldown() {
        var rig = Rig()
        let action = Self.action(cooldown: 60)
        rig.trigger(action, at: 0)
        rig.at(5)
        rig.exit(1, at: 6)
        let cooled = rig.trigger(action, at: 10)
        #expect(rig.decision(cooled) == .cooled(1) && rig.state.inFlight.isEmpty)
        let after = rig.trigger(action, at: 70)
        #expect(rig.decision(after) == .created(2))
        rig.at(75)
        #expect(rig.launched == [1, 2])
        // Run 3 is pending behind run 2 when run 2 succeeds: a trigger then joins it, not the cooldown.
        rig.trigger(action, at: 76)
        rig.exit(2, at: 77)
        let joined = rig.trigger(action, at: 78)
        #expect(rig.decision(joined) == .joined(3))
        rig.at(83)
        #expect(rig.launched == [1, 2, 3])
    }

    @Test("locks: a pending run whose window ended waits for its lock like any run, and says so")
    func locks() {
        var rig = Rig()
        var migrate = Action(name: "migrate", exec: ["x"], policy: .reject)
        migrate.locks = [LockClaim("db", limit: 1)]
        rig.trigger(migrate, at: 0)
        #expect(rig.launched == [1])
        rig.trigger(Self.action(locks: ["db"]), at: 1)
        rig.at(6)
        #expect(rig.launched == [1] && rig.state.snapshot(of: 2)?.waiting?.lock == "db")
        rig.exit(1, at: 7)
        #expect(rig.launched == [1, 2])
    }

    @Test("a trigger of a run due but waiting for its lock opens its window again")
    func regated() {
        var rig = Rig()
        var migrate = Action(name: "migrate", exec: ["x"], policy: .reject)
        migrate.locks = [LockClaim("db", limit: 1)]
        rig.trigger(migrate, at: 0)
        rig.trigger(Self.action(locks: ["db"]), at: 1)
        rig.at(6)
        let late = rig.trigger(Self.action(locks: ["db"]), at: 7)
        #expect(rig.decision(late) == .joined(2) && rig.state.snapshot(of: 2)?.waiting == nil)
        rig.exit(1, at: 8)
        #expect(rig.launched == [1], "its lock is free, but its window is open again")
        rig.at(12)
        #expect(rig.launched == [1, 2])
    }

    @Test("a hook of a debounced action: a burst of ends makes one hook run, each later end pushing its start back")
    func hooks() {
        var notify = Action(name: "notify", exec: ["x"], policy: .reject)
        notify.debounce = .seconds(5)
        let jobs = ["a", "b"].map { name in
            var job = Action(name: name, exec: ["x"], policy: .reject)
            job.hooks.targets[.success] = HookTarget(action: notify, params: [:])
            return job
        }
        var rig = Rig()
        rig.trigger(jobs[0], at: 0)
        rig.exit(1, at: 1)
        rig.trigger(jobs[1], at: 2)
        rig.exit(3, at: 3)
        #expect(rig.records == [.debounced] && rig.state.inFlight.map(\.id) == [2])
        rig.at(7.9)
        #expect(rig.launched == [1, 3])
        rig.at(8)
        #expect(rig.launched == [1, 3, 2])
    }

    static func unfinished(queuedAt seconds: Int) -> RecoveredRun {
        let run = RunSnapshot(id: 7, action: "ci", key: "ci", phase: .queued, policy: .queue, params: [:], trigger: nil,
                              queuedAt: Rig.start + .seconds(seconds))
        return RecoveredRun(UnfinishedRun(run: run, lastSeq: 1), action: action())
    }

    @Test("recovery: a pending run waits out a window from the restart, recorded in its new queued transition, and starts once")
    func recovery() {
        var rig = Rig()
        rig.at(100)
        rig.handle(.recover(1, [Self.unfinished(queuedAt: 98)]))
        let transitions = rig.written.compactMap { if case let .transition(transition) = $0 { transition } else { nil } }
        #expect(transitions.map(\.detail.debounce) == [(Rig.start + .seconds(105)).rawValue])
        #expect(transitions.map(\.detail.reason) == ["recovered"])
        let joined = rig.trigger(Self.action(), at: 101)
        #expect(rig.decision(joined) == .joined(7))
        rig.at(105.9)
        #expect(rig.launched.isEmpty)
        rig.at(106)
        #expect(rig.launched == [7])
        rig.at(200)
        #expect(rig.launched == [7])
    }

    @Test("recovery after maxWait: the pending run starts at once")
    func recoveryLate() {
        var rig = Rig()
        rig.at(100)
        rig.handle(.recover(1, [Self.unfinished(queuedAt: 10)]))
        #expect(rig.launched == [7])
    }

    struct Failed: Error {}
}
