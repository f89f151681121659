import BatonCore
@testable import BatonIPC
import Dispatch
import FoundationEssentials
import Glibc
import Testing

/// Reading paused at a connection's in-flight limit (`maxRequestsInFlight`), at the socket server
/// alone: a client that pipelines more requests than the limit (a thousand `wait`s) is batond's
/// to slow down, not a slow client; the slow-request sweep must not close it while batond does not read.
@Suite("Server: reading paused at the in-flight limit", .serialized, .offPool, .slotTimeLimit(.seconds(60)))
struct ServerInFlightTests {
    /// Runs `body` on the loop and waits for what it returns (posts run in order: after what was posted before).
    @discardableResult
    static func onLoop<T: Sendable>(_ reactor: Reactor, _ body: @escaping @Sendable () -> T) -> T {
        let (done, result) = (DispatchSemaphore(value: 0), Locked<T?>(nil))
        reactor.post {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    @Test("four requests and a half line, limit 4: reading pauses; a sweep an hour later leaves the connection open; once three are answered reading resumes, and the half line is timed from then (a sweep an hour after that closes it bad_request)")
    func halfLineWhilePaused() async throws {
        let path = "/tmp/baton-inflight-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let reactor = Reactor(), holder = ServerQuiesceTests.Holder()
        var limits = Server.Limits()
        limits.maxRequestsInFlight = 4
        let server = try Server(listening: try UnixSocket.listen(path: path), limits: limits, reactor: reactor, delegate: holder)
        Task(executorPreference: OffPoolThreads.shared) { await server.run() }
        let client = try UnixSocket.connect(path: path)
        defer { close(client) }
        ServerQuiesceTests.send(client, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n{\"id\":4}\n{\"id\":5,")
        var arrivals = holder.arrivals.makeAsyncIterator()
        for _ in 0..<4 { _ = await arrivals.next() }
        let callers = holder.taken.withLock { $0.map(\.caller) }
        let connection = try #require(callers.first as? ServerConnection)
        // The half line is buffered once the loop has read the chunk (in order with this post).
        #expect(!Self.onLoop(reactor) { connection.mayRead }, "four in flight: reading paused")
        Self.onLoop(reactor) { server.dropSlowRequests(now: .now + .seconds(3_600)) }
        #expect(!connection.isClosed, "batond's own pause is not a slow request line")
        for (index, caller) in callers.prefix(3).enumerated() {
            caller.send(Array(#"{"id":\#(index + 1),"ok":true}"#.utf8))
            caller.endRequest()
        }
        #expect(Self.onLoop(reactor) { connection.mayRead }, "one in flight, at most half the limit: reading again")
        Self.onLoop(reactor) { server.dropSlowRequests(now: .now + .seconds(3_600)) }
        #expect(connection.isClosed, "the half line, still unfinished an hour after reading resumed, is the client's")
        let text = ServerQuiesceTests.readToEnd(client)
        #expect(text.hasPrefix("{\"id\":1,\"ok\":true}\n{\"id\":2,\"ok\":true}\n{\"id\":3,\"ok\":true}\n"), "\(text)")
        #expect(text.contains("request line not finished within"), "\(text)")
        server.stop()
    }
}
