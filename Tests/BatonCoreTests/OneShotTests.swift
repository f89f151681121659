import BatonRuntime
import CBatonSystem
import Foundation
import Testing

@Suite("OneShot: a result handed once from one thread to another", .offPool)
struct OneShotTests {
    @Test("the first set stands: a second is refused and changes nothing")
    func setTwiceRefused() {
        let cell = OneShot<Int>()
        #expect(cell.value == nil)
        #expect(cell.set(1))
        #expect(!cell.set(2))
        #expect(cell.value == 1)
        #expect(cell.wait() == 1)
    }

    @Test("wait returns the value another thread sets, to every waiter")
    func waitReturnsTheValue() {
        let cell = OneShot<String>()
        let go = DispatchSemaphore(value: 0)
        let waiters = (0..<3).map { _ in OneShot<String>() }
        let (waiting, threads) = (DispatchSemaphore(value: 0), Recorder<pid_t>())
        for waiter in waiters {
            SystemThread.start { threads.append(baton_gettid()); waiting.signal(); waiter.set(cell.wait()) }
        }
        SystemThread.start {
            go.wait()
            cell.set("done")
        }
        for _ in waiters { waiting.wait() }
        // Each waiter has said it is about to wait; each blocks in the semaphore (its thread asleep
        // in the kernel, `S` in its stat), so the set below wakes one and each passes the wake-up
        // on (the path under test). Nothing else puts these threads to sleep before the set.
        Eventually.until("the three waiters asleep: \(threads.all.map { Self.state(of: $0) })", within: 10) {
            threads.all.allSatisfy { Self.state(of: $0) == "S" }
        }
        #expect(cell.value == nil)
        go.signal()
        #expect(cell.wait() == "done")
        #expect(waiters.map { $0.wait() } == ["done", "done", "done"])
    }

    /// A thread's state as its stat says it (`R` running, `S` asleep), "?" when unreadable.
    static func state(of thread: pid_t) -> String {
        let stat = (try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8)) ?? ""
        return stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
    }

    @Test("a wait with a deadline returns nil at the deadline, the value once set")
    func waitUntil() {
        let cell = OneShot<Int>()
        #expect(cell.wait(until: .now() + .milliseconds(20)) == nil)
        SystemThread.start { cell.set(7) }
        #expect(cell.wait(until: .now() + .seconds(60)) == 7)
        #expect(cell.wait(until: .now()) == 7)
    }

    @Test("it takes no lock, so nothing is done under one")
    func noEffectUnderItsLock() throws {
        let text = try String(contentsOf: LayoutTests.sources.appendingPathComponent("BatonRuntime/OneShot.swift"), encoding: .utf8)
        let code = EffectsUnderLockTests.blankCommentsAndStrings(text)
        #expect(!code.contains("withLock") && !code.contains("Locked("), "OneShot takes a lock")
        #expect(code.contains("assertNoLockHeld("), "OneShot's wait does not check that no lock is held")
        #expect(EffectsUnderLockTests.findings(in: text).isEmpty)
    }
}
