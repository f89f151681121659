import BatonCore
@testable import BatonIPC
import Dispatch
import FoundationEssentials
import Glibc
import Testing

/// A connection's output limit counts what the client leaves unread, not what one turn of the loop
/// wrote and sends at its end (review-loop6 finding 6).
@Suite("Server: the output limit and the turn's one send", .serialized, .timeLimit(.minutes(1)))
struct ServerOutputLimitTests {
    @Test("one turn writes four times the connection's limit, the socket takes it all: every line arrives, the connection stays open")
    func turnPastTheLimit() async throws {
        let path = "/tmp/baton-limit-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let reactor = Reactor(), holder = ServerQuiesceTests.Holder()
        let server = try Server(listening: try UnixSocket.listen(path: path), limits: Server.Limits(outputLimit: 32 << 10),
                                reactor: reactor, delegate: holder)
        Task { await server.run() }
        defer { server.stop() }
        let client = try UnixSocket.connect(path: path)
        unlink(path)
        defer { close(client) }
        ServerQuiesceTests.send(client, "{\"id\":1}\n")
        var arrivals = holder.arrivals.makeAsyncIterator()
        _ = await arrivals.next()
        let caller = holder.taken.withLock { $0[0].caller }
        // 16 lines of 8 KiB in one turn: 128 KiB, less than an AF_UNIX socket takes unread
        // (wmem_default, 208 KiB), four times the limit.
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 8 << 10)
        let written = DispatchSemaphore(value: 0)
        reactor.post {
            for _ in 0..<16 { caller.send(line) }
            written.signal()
        }
        written.wait()
        // Read only now, after the turn: the socket held it all.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var lines = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while lines < 16 {
            let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            lines += buffer[..<n].count { $0 == UInt8(ascii: "\n") }
        }
        #expect(lines == 16, "the connection was closed after \(lines) lines")
        #expect((caller as? ServerConnection)?.isClosed == false)
    }
}
