import BatonCore
@testable import BatonIPC
import Dispatch
import FoundationEssentials
import Glibc
import Testing

/// A restart in place, at the socket server alone (`Server.quiesce`): nothing is read after it,
/// what was read is answered, a parked stream is cut, `{"restarting":true}` is the last line.
@Suite("Server: quiescing for a restart in place", .serialized, .offPool, .slotTimeLimit(.seconds(60)))
/// Serialized, and each test awaits the requests' arrival rather than blocking on a semaphore: the
/// server's `run` task needed a thread of the cooperative pool (two on a 2-core machine), and tests
/// blocked waiting for it starved it (a run of several suites hung). Now the tests and that task run
/// off the pool.
struct ServerQuiesceTests {
    /// Keeps each request; one whose line says `park` gets an event and is parked at once.
    final class Holder: RequestHandler {
        let taken = Locked<[(caller: any Caller, line: String)]>([])
        /// One element per request taken: awaited, not waited on a semaphore, so that a test
        /// holds no thread of the cooperative pool that the server's `run` task needs.
        let (arrivals, arrival) = AsyncStream<Void>.makeStream()

        func received(_ frame: RequestFrame, from caller: any Caller) {
            guard case let .line(bytes) = frame else { return }
            let line = String(decoding: bytes, as: UTF8.self)
            taken.withLock { $0.append((caller, line)) }
            if line.contains("park") {
                caller.send(Array(#"{"id":2,"event":"update"}"#.utf8))
                caller.park()
            }
            arrival.yield()
        }

        func closed(_ caller: any Caller) {}
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    static func readToEnd(_ fd: Int32) -> String {
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            all += buffer[..<n]
        }
        return String(decoding: all, as: UTF8.self)
    }

    /// A server on a fresh socket (removed once listened on: the client is connected), running, and a client.
    static func serving() throws -> (Reactor, Holder, Server, Int32) {
        let path = "/tmp/baton-quiesce-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let reactor = Reactor(), holder = Holder()
        let server = try Server(listening: try UnixSocket.listen(path: path), reactor: reactor, delegate: holder)
        // Off the pool too (`.offPool` leaves a `Task {}` there): the run's synchronous tests fill the
        // pool's queue at its start, and this task waited behind them past the test's limit.
        Task(executorPreference: OffPoolThreads.shared) { await server.run() }
        return (reactor, holder, server, try UnixSocket.connect(path: path))
    }

    @Test("read before: answered, then the stream's line, then restarting last; sent after: never read; quiet once closed")
    func quiesce() async throws {
        let (reactor, holder, server, client) = try Self.serving()
        defer { close(client) }
        Self.send(client, "{\"id\":1}\n{\"id\":2,\"park\":true}\n")
        var arrivals = holder.arrivals.makeAsyncIterator()
        for _ in 0..<2 { _ = await arrivals.next() }
        let quiet = DispatchSemaphore(value: 0)
        server.quiesce(within: .seconds(30)) { quiet.signal() }
        // The loop takes posts in order: once this one runs, the server has stopped reading.
        let posted = DispatchSemaphore(value: 0)
        reactor.post { posted.signal() }
        posted.wait()
        Self.send(client, "{\"id\":3}\n")
        // Two more turns of the loop: request 3 is in the socket before the first is posted, so
        // the wait after it reports the socket readable, and its handlers run before the second.
        // A server still reading would have taken request 3 by then.
        for _ in 0..<2 {
            let turned = DispatchSemaphore(value: 0)
            reactor.post { turned.signal() }
            turned.wait()
        }
        #expect(holder.taken.withLock { $0.count } == 2, "request 3 was not read after the quiesce")
        #expect(quiet.wait(timeout: .now()) == .timedOut, "request 1 is not answered yet")
        // A request not taken (a test ended at its bound) fails here, not the process on an index.
        let first = try #require(holder.taken.withLock { $0.first?.caller })
        first.send(Array(#"{"id":1,"ok":true}"#.utf8))
        first.endRequest()
        let text = Self.readToEnd(client)
        #expect(text == "{\"id\":2,\"event\":\"update\"}\n{\"id\":1,\"ok\":true}\n{\"restarting\":true}\n", "\(text)")
        #expect(quiet.wait(timeout: .usualWait) == .success)
        #expect(holder.taken.withLock { $0.map(\.line) } == ["{\"id\":1}", "{\"id\":2,\"park\":true}"], "request 3 was never read")
        server.stop()
    }

    @Test("a half line buffered at the quiesce: not closed bad_request by the slow-request sweep; the taken request answered, restarting last")
    func halfLine() async throws {
        let (reactor, holder, server, client) = try Self.serving()
        defer { close(client) }
        Self.send(client, "{\"id\":1}\n{\"id\":2,")
        var arrivals = holder.arrivals.makeAsyncIterator()
        _ = await arrivals.next()
        // Read by the loop (in order with this post): the half line is buffered.
        let read = DispatchSemaphore(value: 0)
        reactor.post { read.signal() }
        read.wait()
        let quiet = DispatchSemaphore(value: 0)
        server.quiesce(within: .seconds(30)) { quiet.signal() }
        // A sweep as if an hour had passed (on the loop, as the timer's): before, it closed the
        // connection here. (No real wait: a sweep before the quiesce under load would race it.)
        let swept = DispatchSemaphore(value: 0)
        reactor.post {
            server.dropSlowRequests(now: .now + .seconds(3_600))
            swept.signal()
        }
        swept.wait()
        // A request not taken (a test ended at its bound) fails here, not the process on an index.
        let first = try #require(holder.taken.withLock { $0.first?.caller })
        first.send(Array(#"{"id":1,"ok":true}"#.utf8))
        first.endRequest()
        let text = Self.readToEnd(client)
        #expect(text == "{\"id\":1,\"ok\":true}\n{\"restarting\":true}\n", "\(text)")
        #expect(quiet.wait(timeout: .usualWait) == .success)
        server.stop()
    }

    @Test("a parked request that ends (unpark, then its answer) does not count at the quiesce: restarting waits for the request still in flight")
    func unparkedCounts() async throws {
        let (reactor, holder, server, client) = try Self.serving()
        defer { close(client) }
        Self.send(client, "{\"id\":2,\"park\":true}\n{\"id\":1}\n")
        var arrivals = holder.arrivals.makeAsyncIterator()
        for _ in 0..<2 { _ = await arrivals.next() }
        // The parked stream ends as `Exchange.finish`/`fail` end it: unpark, then the answer.
        let parked = try #require(holder.taken.withLock { $0.first?.caller })
        parked.unpark()
        parked.send(Array(#"{"id":2,"ok":false}"#.utf8))
        parked.endRequest()
        server.quiesce(within: .seconds(30)) { }
        let posted = DispatchSemaphore(value: 0)
        reactor.post { posted.signal() }
        posted.wait()
        // Request 1 is still in flight: the connection is not sealed under it.
        let second = holder.taken.withLock { $0[1].caller }
        second.send(Array(#"{"id":1,"ok":true}"#.utf8))
        second.endRequest()
        let text = Self.readToEnd(client)
        #expect(text == "{\"id\":2,\"event\":\"update\"}\n{\"id\":2,\"ok\":false}\n{\"id\":1,\"ok\":true}\n{\"restarting\":true}\n", "\(text)")
        server.stop()
    }

    @Test("a stop's closeListener after quiesce: a client connecting then is refused at once, not left in a backlog nobody reads")
    func listenerClosedAtAStop() async throws {
        let path = "/tmp/baton-quiesce-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let reactor = Reactor()
        let server = try Server(listening: try UnixSocket.listen(path: path), reactor: reactor, delegate: Holder())
        Task(executorPreference: OffPoolThreads.shared) { await server.run() }
        // A copy of the listening socket, as a child being spawned by another thread holds one
        // until its exec: the listener must refuse connections all the same.
        let copy = dup(server.listeningDescriptor)
        defer { close(copy) }
        server.quiesce(within: .seconds(30)) {}
        server.closeListener()
        // The loop takes posts in order: once this one runs, the listener is closed.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in reactor.post { continuation.resume() } }
        let refused = (try? UnixSocket.connect(path: path)).map { fd in close(fd); return false } ?? true
        #expect(refused, "a connection was taken into the backlog of a stopping batond")
        server.stop()
    }
}
