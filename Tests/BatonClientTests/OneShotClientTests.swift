@testable import BatonClient
import BatonCore
import Foundation
import Testing

/// The one-shot client on real sockets: a socket pair whose far end the test plays batond on
/// (the client reads and writes on the calling thread, so the test writes batond's lines first),
/// and real paths for the ways a connection fails.
@Suite("OneShotClient: one question at a time on the calling thread")
struct OneShotClientTests {
    /// A client on one end of a socket pair, and the other end for the test to play batond.
    static func pair() throws -> (client: OneShotClient, batond: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        return (OneShotClient(fd: ends[0], name: "fake"), ends[1])
    }

    static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    /// What the client wrote, as lines.
    static func requests(_ fd: Int32) -> [String] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static func request(_ line: String) throws -> Request {
        try JSONDecoder().decode(Request.self, from: Data(line.utf8))
    }

    @Test("status: one line with id 1; an event and another id's answer are passed over, its own answer read")
    func status() throws {
        let (client, batond) = try Self.pair()
        defer { close(batond) }
        Self.write(batond, #"{"id":1,"event":"update"}"# + "\n" + #"{"id":7,"ok":true,"actions":[]}"# + "\n")
        Self.write(batond, #"{"id":1,"ok":true,"actions":[{"name":"hello","exec":["true"],"policy":"reject","policies":["reject"],"keyParams":[],"params":{}}],"processTree":"cgroup"}"# + "\n")
        let status = try client.ask(.status)
        #expect(status.actions.map(\.name) == ["hello"] && status.processTree == "cgroup" && status.storeProblem == nil)
        let sent = Self.requests(batond)
        #expect(sent.count == 1)
        let request = try Self.request(try #require(sent.first))
        #expect(request.op == .status && request.id == .number(1))
    }

    @Test("questions on one connection take ids 1, 2…, and each reads only its own answer")
    func ids() throws {
        let (client, batond) = try Self.pair()
        defer { close(batond) }
        Self.write(batond, #"{"id":1,"ok":true,"version":"9.9"}"# + "\n" + #"{"id":2,"ok":true,"runs":[]}"# + "\n")
        #expect(try client.ask(.version) == "9.9")
        #expect(try client.ask(.history(HistoryFilter(actions: ["a"], limit: 3))) == [])
        let sent = try Self.requests(batond).map(Self.request)
        #expect(sent.map(\.id) == [.number(1), .number(2)])
        #expect(sent.map(\.op) == [.ping, .history] && sent[1].filter?.limit == 3 && sent[1].filter?.actions == ["a"])
    }

    @Test("history gathers runs events before its final answer into one list; another id's events and answers are passed over")
    func historyPages() throws {
        let (client, batond) = try Self.pair()
        defer { close(batond) }
        let run = #"{"id":%d,"action":"a","key":"a","phase":"success","policy":"reject","params":{},"queuedAt":1,"attempts":1}"#
        func runs(_ ids: [Int]) -> String { "[" + ids.map { String(format: run, $0) }.joined(separator: ",") + "]" }
        Self.write(batond, #"{"id":1,"event":"runs","runs":\#(runs([5, 4]))}"# + "\n" + #"{"id":9,"event":"runs","runs":\#(runs([99]))}"# + "\n")
        Self.write(batond, #"{"id":1,"event":"runs","runs":\#(runs([3, 2]))}"# + "\n" + #"{"id":1,"ok":true,"runs":\#(runs([1]))}"# + "\n")
        #expect(try client.ask(.history(HistoryFilter(limit: 5))).map(\.id) == [5, 4, 3, 2, 1])
    }

    @Test("a refusal throws its case, with batond's message")
    func refusal() throws {
        let (client, batond) = try Self.pair()
        defer { close(batond) }
        Self.write(batond, #"{"id":1,"ok":false,"error":{"code":"unknown_run","message":"no run 9"}}"# + "\n")
        #expect(throws: BatonClientError.unknownRun("no run 9")) { try client.ask(.show(9)) }
    }

    @Test("the connection ending before the answer, or a line it cannot read: unavailable, in BatonClient's words")
    func lost() throws {
        let (client, batond) = try Self.pair()
        Self.write(batond, #"{"id":1,"event":"update"}"# + "\n" + #"{"id":1,"ok":tr"#)
        close(batond)
        #expect(throws: BatonClientError.unavailable("lost batond at fake: batond closed the connection before answering")) {
            try client.ask(.status)
        }
        let (other, far) = try Self.pair()
        defer { close(far) }
        Self.write(far, "not json\n")
        #expect(throws: BatonClientError.unavailable("batond sent a line this client cannot read: not json")) { try other.ask(.actions) }
    }

    @Test("no socket, or a socket nobody listens on: the error BatonClient gives, naming the path")
    func unreachable() throws {
        let directory = NSTemporaryDirectory() + "oneshot-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = directory + "/missing.sock"
        let stale = directory + "/stale.sock"
        // A socket file left by a listener that is gone: connecting is refused.
        close(try FakeBatond.listen(stale))
        for (path, reason) in [(missing, "No such file or directory"), (stale, "Connection refused")] {
            let expected = BatonClientError.unavailable("cannot reach batond at \(path): \(reason)")
            #expect(throws: expected) { _ = try OneShotClient(socket: path) }
            #expect(throws: expected) { _ = try BatonClient(socket: path) }
        }
    }
}
