import BatonClient
import BatonCore
import Foundation
import Testing

/// `BatonClient.watch(socket:)` against a batond the test plays on a real socket, while every
/// thread of Swift's cooperative pool is blocked (it has as many as cores): the watch connects,
/// asks and yields on a thread of its own, so a caller that blocks the pool (a synchronous test's
/// wait, a CLI's bridge) does not hold it up. Off the pool itself (`.offPool`): the test's own
/// waits and its iteration of the stream run on threads of their own.
@Suite("BatonClient.watch(socket:) off the cooperative pool", .offPool)
struct WatchOffPoolTests {
    /// A listener at `path` whose first connection is answered, once its request line came, with
    /// the watch's `watching` event and one update of run 7; kept open until the client ends it,
    /// then `ended` is signalled.
    static func watchingOnce(_ path: String, ended: DispatchSemaphore) throws -> Int32 {
        let fd = try FakeBatond.listen(path)
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            guard let request = FakeBatond.request(on: client) else { return }
            var watching = Response(id: request.id, ok: nil)
            watching.event = "watching"
            FakeBatond.send(watching.jsonLine(), to: client)
            FakeBatond.send(Response.update(request.id, RunUpdate(run: BatonClientTests.run(7, .loading), transition: nil)).jsonLine(), to: client)
            // Open until the client ends the watch (its read sees the end).
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(client, $0.baseAddress, $0.count) }) > 0 {}
            ended.signal()
        }
        return fd
    }

    /// Waits on `semaphore`, blocking the thread, for `seconds` at most; whether it was signalled.
    static func waited(for semaphore: DispatchSemaphore, seconds: Int = 30) -> Bool {
        semaphore.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    @Test("with every thread of the cooperative pool blocked, the watch connects, is watching and yields its first update; then the blocked threads are let go, and letting go of the stream ends the connection")
    func watchesWhilePoolIsBlocked() async throws {
        let directory = NSTemporaryDirectory() + "watch-offpool-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/baton.sock"
        let ended = DispatchSemaphore(value: 0)
        let listener = try Self.watchingOnce(path, ended: ended)
        // `shutdown` wakes the listener thread's `accept` if the watch never connected (a close does not).
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        // Every pool thread blocked until the update came (a bound only against a hang: before
        // the watch ran on a thread of its own, its task waited for a pool thread, and none came).
        let width = ProcessInfo.processInfo.activeProcessorCount
        let (entered, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let blockers = (0..<width).map { _ in
            Task.detached { () -> Bool in
                entered.signal()
                return Self.waited(for: release)
            }
        }
        for _ in 0..<width { try #require(Self.waited(for: entered, seconds: 3_600), "every blocker on a pool thread") }
        // The premise: those were the whole pool. A pool wider than `activeProcessorCount` (it counts
        // a cgroup's CPU quota, the pool the online CPUs) would run this probe, and a watch on the pool too.
        let probe = DispatchSemaphore(value: 0)
        Task.detached { probe.signal() }
        // The stream and its iterator are let go of at the end of this call.
        func firstUpdate() async throws -> RunUpdate? {
            var iterator = BatonClient.watch(socket: path).makeAsyncIterator()
            return try await iterator.next()
        }
        let first = try await firstUpdate()
        let poolWasWider = probe.wait(timeout: .now()) == .success
        for _ in 0..<width { release.signal() }
        var released = 0
        for blocker in blockers where await blocker.value { released += 1 }
        #expect(first?.run.id == 7)
        #expect(!poolWasWider, "the cooperative pool was wider than the \(width) threads blocked: this run proved nothing")
        #expect(released == width, "the update came while every pool thread was blocked: \(released) of \(width) let go by it")
        // The watch's read, blocked on a quiet connection, gives up: batond sees the connection end.
        #expect(Self.waited(for: ended), "the connection ended once the stream was let go of")
    }
}
