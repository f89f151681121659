@testable import BatonCore
@testable import BatonEngine
import CBatonSystem
import Foundation
import Testing

@Suite("Reactor: descriptors, timers and posted work on one loop", .offPool)
struct ReactorTests {
    let reactor = Reactor()

    /// A pipe whose ends are closed by the test.
    struct Pipe {
        var read: Int32
        var write: Int32
        init() throws {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            (read, write) = (fds[0], fds[1])
        }
    }

    /// Holds the loop inside a posted item until `release()`, so that what happens meanwhile is
    /// read by its next `epoll_wait`, in one batch.
    final class Hold: Sendable {
        private let held = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        init(_ reactor: Reactor) {
            reactor.post { [self] in
                held.signal()
                released.wait()
            }
            held.wait()
        }
        func release() { released.signal() }
    }

    @Test("work for the turn's end runs after the turn's posted work and timers, before the next turn; more of it asked there runs too")
    func turnEnd() {
        let order = Locked<[String]>([]), done = DispatchSemaphore(value: 0)
        let hold = Hold(reactor)
        reactor.post { [reactor] in
            order.withLock { $0.append("posted") }
            reactor.atTurnEnd {
                order.withLock { $0.append("end") }
                reactor.atTurnEnd { order.withLock { $0.append("end again") } }
                reactor.post {
                    order.withLock { $0.append("next turn") }
                    done.signal()
                }
            }
            reactor.post { order.withLock { $0.append("posted from the turn") } }
        }
        reactor.post { order.withLock { $0.append("posted after") } }
        hold.release()
        #expect(done.wait(timeout: .usualWait) == .success)
        #expect(order.withLock { $0 } == ["posted", "posted after", "end", "end again", "posted from the turn", "next turn"])
    }

    @Test("an event read in the same batch as a close never reaches the watch that reused the descriptor's number")
    func reusedDescriptor() throws {
        // The bug: handlers were found by descriptor number, so a ready event of a pipe closed by
        // an earlier handler of the batch went to the new watch of the same number (a new
        // attempt's pidfd, whose handler then reaped a leader still running, blocking the loop).
        var reused = 0
        for _ in 0..<20 {
            let first = try Pipe(), second = try Pipe()
            let calls = Collected<String>(), done = DispatchSemaphore(value: 0)
            let replacement = Locked<Pipe?>(nil)
            let hold = Hold(reactor)
            reactor.watch(first.read) { [reactor, first, second] _ in
                var byte: UInt8 = 0
                _ = read(first.read, &byte, 1)
                calls.append("first")
                reactor.remove(first.read)
                reactor.remove(second.read)
                close(second.read)
                // The lowest free number: the one just closed.
                let made = try? Pipe()
                replacement.withLock { $0 = made }
                if let made { reactor.watch(made.read) { _ in calls.append("replacement") } }
                reactor.post { done.signal() }
            }
            reactor.watch(second.read) { _ in calls.append("second") }
            _ = write(first.write, "x", 1)
            _ = write(second.write, "x", 1)
            hold.release()
            done.wait()
            // A round trip through the loop: any stale call would have been made by now.
            let after = DispatchSemaphore(value: 0)
            reactor.post { after.signal() }
            after.wait()
            #expect(calls.all == ["first"], "\(calls.all)")
            for fd in [first.read, first.write, second.write] { close(fd) }
            if let made = replacement.withLock({ $0 }) {
                // Other tests open descriptors too: the number is not always the one closed.
                if made.read == second.read { reused += 1 }
                reactor.remove(made.read)
                close(made.read)
                close(made.write)
            }
        }
        #expect(reused > 0, "no new pipe reused the closed number: the test proved nothing")
    }

    @Test("work posted and a timer set on the loop itself run with nothing else to wake it")
    func fromTheLoop() {
        // Neither writes the wake-up eventfd from the loop's own thread: the loop looks at posted
        // work and its deadlines after the turn, before it waits.
        let done = DispatchSemaphore(value: 0)
        reactor.post { [reactor] in
            reactor.post {
                reactor.after(.milliseconds(1)) { done.signal() }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    @Test("a descriptor closed with close, its file still open elsewhere (a spawning child's copy), reaches no handler, and its number's next watch hears only its own")
    func closeWithoutRemove() throws {
        let old = try Pipe()
        // The copy a child being spawned would hold until its exec: the registration outlives the close.
        let copy = dup(old.read)
        defer { close(copy); close(old.write) }
        let calls = Collected<String>(), closed = DispatchSemaphore(value: 0)
        reactor.watch(old.read, events: Epoll.input | Epoll.edgeTriggered) { _ in calls.append("old") }
        reactor.post { [reactor, old] in
            reactor.close(old.read)
            closed.signal()
        }
        closed.wait()
        let new = try Pipe()
        defer { reactor.remove(new.read); close(new.read); close(new.write) }
        let heard = DispatchSemaphore(value: 0)
        reactor.watch(new.read, events: Epoll.input | Epoll.edgeTriggered) { [new] _ in
            var byte: UInt8 = 0
            _ = read(new.read, &byte, 1)
            calls.append("new")
            heard.signal()
        }
        // An edge on the closed watch's file (still registered, under its old token), then one on the new.
        _ = write(old.write, "x", 1)
        _ = write(new.write, "x", 1)
        heard.wait()
        let after = DispatchSemaphore(value: 0)
        reactor.post { after.signal() }
        after.wait()
        #expect(calls.all == ["new"], "\(calls.all)")
    }

    @Test("a descriptor watched again without remove calls only the new handler")
    func watchAgain() throws {
        let pipe = try Pipe()
        defer { close(pipe.read); close(pipe.write) }
        let calls = Collected<String>(), heard = DispatchSemaphore(value: 0)
        reactor.watch(pipe.read) { _ in calls.append("old") }
        reactor.watch(pipe.read) { [pipe] _ in
            var byte: UInt8 = 0
            _ = read(pipe.read, &byte, 1)
            calls.append("new")
            heard.signal()
        }
        _ = write(pipe.write, "x", 1)
        heard.wait()
        reactor.remove(pipe.read)
        #expect(calls.all == ["new"])
    }

    @Test("a descriptor closed without remove, and a new one of the same number watched, is heard")
    func closedWithoutRemove() throws {
        let old = try Pipe()
        reactor.watch(old.read) { _ in }
        close(old.read)
        close(old.write)
        let pipe = try Pipe()
        defer { close(pipe.read); close(pipe.write) }
        let heard = DispatchSemaphore(value: 0)
        reactor.watch(pipe.read) { [pipe] _ in
            var byte: UInt8 = 0
            _ = read(pipe.read, &byte, 1)
            heard.signal()
        }
        _ = write(pipe.write, "x", 1)
        #expect(heard.wait(timeout: .now() + 30) == .success)
        reactor.remove(pipe.read)
    }

    @Test("timers run in deadline order, posted work in posting order, and a cancelled timer never runs")
    func ordering() async {
        // On a clock the test moves (`TestClock`): on the system's, a loaded machine armed t20 more
        // than 10 ms after t30, so t30 was due first and the check ran before t20 (ci35a).
        let clock = TestClock()
        let reactor = clock.reactor()
        let order = Collected<String>()
        let hold = Hold(reactor)
        reactor.after(.milliseconds(30)) { order.append("t30") }
        let cancelled = reactor.after(.milliseconds(10)) { order.append("cancelled") }
        reactor.after(.milliseconds(20)) { order.append("t20") }
        reactor.post { order.append("p1") }
        reactor.post { order.append("p2") }
        reactor.cancel(cancelled)
        hold.release()
        await clock.advance(by: .milliseconds(30))
        // Posted work and due timers interleave by turn (work posted during a turn runs in the
        // next, after that turn's due timers): only each kind's own order is fixed.
        #expect(order.all.filter { $0.hasPrefix("p") } == ["p1", "p2"])
        #expect(order.all.filter { $0.hasPrefix("t") } == ["t20", "t30"])
        #expect(!order.all.contains("cancelled"))
    }
}

/// Collects values from many threads.
private final class Collected<Value: Sendable>: Sendable {
    private let items = Locked<[Value]>([])
    func append(_ item: Value) { items.withLock { $0.append(item) } }
    var all: [Value] { items.withLock { $0 } }
}

@Suite("Reactor: which thread is the loop's")
struct ReactorThreadTests {
    @Test("isCurrent is true on the loop's thread only, and each thread's cached id is the kernel's")
    func isCurrent() async {
        let reactor = Reactor()
        #expect(!reactor.isCurrent)
        let onLoop = await withCheckedContinuation { continuation in
            reactor.post { continuation.resume(returning: (reactor.isCurrent, baton_gettid() == Self.kernelThreadID(), baton_gettid())) }
        }
        #expect(onLoop.0)
        #expect(onLoop.1)
        // Other threads: their own ids (asked twice, the second from the cache), never the loop's.
        let ids = Locked<[(cached: pid_t, kernel: pid_t, again: pid_t, current: Bool)]>([])
        let threads = (0..<4).map { _ in
            Thread {
                let first = baton_gettid()
                ids.withLock { $0.append((first, Self.kernelThreadID(), baton_gettid(), reactor.isCurrent)) }
            }
        }
        for thread in threads { thread.start() }
        while ids.withLock({ $0.count }) < threads.count { await Task.yield() }
        for seen in ids.withLock({ $0 }) {
            #expect(seen.cached == seen.kernel && seen.again == seen.kernel)
            #expect(seen.kernel != onLoop.2)
            #expect(!seen.current)
        }
        #expect(Set(ids.withLock { $0.map(\.kernel) }).count == threads.count)
    }

    /// The calling thread's id as the kernel names it: `/proc/thread-self` links to `PID/task/TID`.
    static func kernelThreadID() -> pid_t {
        var buffer = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard n > 0 else { return -1 }
        let link = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return pid_t(link.split(separator: "/").last ?? "") ?? -1
    }
}
