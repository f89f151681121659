@testable import batond
import BatonCore
import Testing

/// batond's parts start in order and stop in reverse, on every path: a part that cannot start
/// leaves the ones before it to be stopped, and none after it started.
@Suite("Daemon parts")
struct PartsTests {
    struct Refused: Error {}

    final class Log: Sendable {
        let lines = Locked<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("started in order, stopped in reverse, each once")
    func order() async throws {
        let log = Log(), parts = Parts()
        for name in ["history", "socket", "server"] {
            try await parts.start(name) {
                log.add("start \(name)")
                return { log.add("stop \(name)") }
            }
        }
        let value = try await parts.start("metrics") { (42, { log.add("stop metrics") }) }
        #expect(value == 42)
        #expect(parts.names == ["history", "socket", "server", "metrics"])
        await parts.stopAll()
        await parts.stopAll()
        #expect(log.all == ["start history", "start socket", "start server", "stop metrics", "stop server", "stop socket", "stop history"])
    }

    @Test("a part that cannot start: the ones before it are stopped, none after it ran")
    func failure() async {
        let log = Log(), parts = Parts()
        do {
            try await parts.start("history") { { log.add("stop history") } }
            try await parts.start("socket") { () throws -> Parts.Stop in throw Refused() }
            try await parts.start("server") {
                log.add("start server")
                return { log.add("stop server") }
            }
            Issue.record("the socket's failure did not stop the start")
        } catch {
            #expect(error is Refused)
        }
        await parts.stopAll()
        #expect(log.all == ["stop history"])
        #expect(parts.names.isEmpty)
    }
}
