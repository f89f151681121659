@testable import batond
import BatonCore
import Dispatch
import Testing

/// The transition log on a real reactor: a turn's lines go to the worker together at the turn's
/// end, all of them out in order by `close`; at most `capacity` lines wait, counted in lines
/// whatever the turns, the rest dropped and counted one by one.
@Suite("TransitionLog: a turn's lines together, bounded in lines")
struct TransitionLogTests {
    static func update(_ run: Int64) -> RunUpdate { JournalTests.update(run, nil, .queued) }

    /// Runs `body` on `reactor`'s loop, in a turn of its own, and waits for it (not for the
    /// turn's end: the next call's body runs after it).
    static func onLoop(_ reactor: Reactor, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            reactor.post {
                body()
                done.resume()
            }
        }
    }

    @Test("lines appended in two turns, then close: every line written, in order")
    func order() async {
        let reactor = Reactor(), written = Locked<[Int64]>([])
        let log = TransitionLog(reactor: reactor) { update in written.withLock { $0.append(update.run.id) } }
        await Self.onLoop(reactor) { for run in Int64(1)...3 { log.append(Self.update(run)) } }
        await Self.onLoop(reactor) { for run in Int64(4)...5 { log.append(Self.update(run)) } }
        await log.close()
        #expect(written.withLock { $0 } == [1, 2, 3, 4, 5])
        #expect(log.dropped.current == 0)
    }

    @Test("a worker held up: lines past the capacity are dropped, counted per line, whatever the turns")
    func bound() async {
        let reactor = Reactor(), written = Locked<[Int64]>([]), gate = DispatchSemaphore(value: 0)
        let log = TransitionLog(reactor: reactor, capacity: 3) { update in
            // The first line holds the worker (stderr blocked) until the test lets it go.
            if update.run.id == 1 { gate.wait() }
            written.withLock { $0.append(update.run.id) }
        }
        await Self.onLoop(reactor) { for run in Int64(1)...2 { log.append(Self.update(run)) } }
        // Room for one line of these three: 4 and 5 dropped.
        await Self.onLoop(reactor) { for run in Int64(3)...5 { log.append(Self.update(run)) } }
        // No room: 6 dropped (a bound by turns would have taken this turn whole).
        await Self.onLoop(reactor) { log.append(Self.update(6)) }
        // A turn after the last's end (its hand-over).
        await Self.onLoop(reactor) {}
        #expect(log.dropped.current == 3)
        gate.signal()
        await log.close()
        #expect(written.withLock { $0 } == [1, 2, 3])
    }
}
