@testable import BatonCore
import Glibc
import Testing

/// A clock that stands still until the test moves it; each move wakes the reactors it drives,
/// which then run the timers due by the new time.
final class TestClock: ReactorClock, @unchecked Sendable {
    private let time: Locked<ContinuousClock.Instant>
    private let woken = Locked<[Reactor]>([])

    init(start: ContinuousClock.Instant = .now) { time = Locked(start) }

    var now: ContinuousClock.Instant { time.withLock { $0 } }
    var advancesByItself: Bool { false }

    /// A reactor on this clock, woken by each `advance`.
    func reactor() -> Reactor {
        let reactor = Reactor(clock: self)
        woken.withLock { $0.append(reactor) }
        return reactor
    }

    /// Moves the time on and returns once every reactor on this clock has run what fell due:
    /// a turn that runs the timers, then a turn after it.
    func advance(by step: Duration) async {
        time.withLock { $0 += step }
        for reactor in woken.withLock({ $0 }) { await Self.settle(reactor) }
    }

    /// Returns after the reactor's next full turn (what was due before the call has run).
    static func settle(_ reactor: Reactor) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reactor.post { reactor.post { continuation.resume() } }
        }
    }
}

@Suite("Reactor: timers on a clock the test drives")
struct ReactorClockTests {
    /// The reactor's thread's id, read on it (`/proc/thread-self` names `PID/task/TID`).
    static func threadID(of reactor: Reactor) async -> String {
        await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
            reactor.post {
                var buffer = [CChar](repeating: 0, count: 64)
                let length = readlink("/proc/thread-self", &buffer, 63)
                continuation.resume(returning: length > 0 ? String(cString: buffer).split(separator: "/").last.map(String.init) ?? "" : "")
            }
        }
    }

    @Test("a reactor nobody holds ends its thread at once: it waits without a timeout, and its end wakes it")
    func releasedReactorEnds() async throws {
        var reactor: Reactor? = Reactor()
        let tid = await Self.threadID(of: reactor!)
        try #require(!tid.isEmpty)
        #expect(access("/proc/self/task/\(tid)", F_OK) == 0)
        reactor = nil
        // The thread's end is the kernel's to report: look until it is gone (at once here: the
        // deinit wakes the thread, which finds the reactor gone), 10 s at most.
        let deadline = ContinuousClock.now + .seconds(10)
        while access("/proc/self/task/\(tid)", F_OK) == 0 && ContinuousClock.now < deadline { await Task.yield() }
        #expect(access("/proc/self/task/\(tid)", F_OK) != 0, "the reactor's thread \(tid) still runs")
    }

    final class Fired: Sendable {
        private let names = Locked<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test("timers fire when the clock reaches them, in deadline order, and a cancelled one never")
    func timersFollowTheClock() async {
        let clock = TestClock()
        let reactor = clock.reactor()
        let fired = Fired()
        reactor.after(.seconds(30)) { fired.add("30s") }
        reactor.after(.seconds(5)) { fired.add("5s") }
        let cancelled = reactor.after(.seconds(10)) { fired.add("10s") }
        reactor.after(.seconds(5)) { fired.add("5s, second") }
        await TestClock.settle(reactor)
        #expect(fired.all == [])
        await clock.advance(by: .seconds(4))
        #expect(fired.all == [])
        reactor.cancel(cancelled)
        await clock.advance(by: .seconds(1))
        #expect(fired.all == ["5s", "5s, second"])
        await clock.advance(by: .seconds(20))
        #expect(fired.all == ["5s", "5s, second"])
        await clock.advance(by: .seconds(5))
        #expect(fired.all == ["5s", "5s, second", "30s"])
    }

    @Test("a timer armed by a timer is measured from the clock's time then")
    func rearmedTimer() async {
        let clock = TestClock()
        let reactor = clock.reactor()
        let fired = Fired()
        reactor.after(.seconds(1)) {
            fired.add("first")
            reactor.after(.seconds(1)) { fired.add("second") }
        }
        await clock.advance(by: .seconds(1))
        #expect(fired.all == ["first"])
        await clock.advance(by: .milliseconds(999))
        #expect(fired.all == ["first"])
        await clock.advance(by: .milliseconds(1))
        #expect(fired.all == ["first", "second"])
    }

    @Test("a conductor on a test clock times a run out when the clock passes its timeout, not before")
    func conductorTimeout() async throws {
        let clock = TestClock()
        let reactor = clock.reactor()
        let conductor = Conductor(actions: [], reactor: reactor)
        conductor.register(Action(name: "slow", timeout: .seconds(30))) { _ in try await Task.sleep(for: .seconds(3_600)) }
        let ticket = try await conductor.trigger(TriggerRequest(action: "slow"))
        await TestClock.settle(reactor)
        await clock.advance(by: .seconds(29))
        #expect(conductor.snapshot(of: ticket.run.id)?.phase == .loading)
        await clock.advance(by: .seconds(1))
        let outcome = await ticket.outcome()
        #expect(outcome?.phase == .failure)
        #expect(outcome?.reason == "timeout")
    }

    @Test("loop-owned state touched off its loop stops the process (debug builds)")
    func offLoop() async {
        await #expect(processExitsWith: .failure) {
            let owned = LoopOwned(0, on: Reactor())
            owned.access { $0 += 1 }
        }
    }

    @Test("a reactor's thread knows it is the loop; other threads do not")
    func assertOnLoop() async {
        let reactor = Reactor()
        #expect(!reactor.isCurrent)
        let onLoop = await withCheckedContinuation { continuation in reactor.post { continuation.resume(returning: reactor.isCurrent) } }
        #expect(onLoop)
    }
}

@Suite("SystemThread.run: blocking work off the cooperative pool")
struct SystemThreadRunTests {
    @Test("the body runs on a thread of its own, not the caller's, and its result comes back")
    func ownThread() async {
        let caller = Self.threadID()
        let (result, ran) = await SystemThread.run { (21 * 2, Self.threadID()) }
        #expect(result == 42)
        #expect(ran != caller && !ran.isEmpty)
    }

    /// The calling thread's id (`/proc/thread-self` names `PID/task/TID`).
    static func threadID() -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, 63)
        return length > 0 ? String(cString: buffer).split(separator: "/").last.map(String.init) ?? "" : ""
    }
}
