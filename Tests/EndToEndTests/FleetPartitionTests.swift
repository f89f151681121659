import BatonCore
import BatonIPC
import CBatonSystem
import Foundation
import Testing

/// A real partition: one host in a network namespace of its own, reaching PostgreSQL over TCP
/// through a veth pair whose link the test takes down while the host runs a long action.
@Suite("End to end: a fleet host cut off from PostgreSQL", .serialized, .offPool)
struct FleetPartitionTests {
    @Test("the cut-off host kills its run before its lease ends; another host takes the key only after; the host rejoins")
    func partition() throws {
        let namespace = try NetworkNamespace()
        let server = try Postgres.server()
        let unix = try server.database()
        let name = try #require(unix.split(separator: " ").first { $0.hasPrefix("dbname=") }).dropFirst(7)
        let log = NSTemporaryDirectory() + "baton-partition-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: log) }
        let actions = """
            long: { exec: ["sh", "-c", "echo start $(date +%s%N) $$ $BATON_RUN_ID >> \\"$LOG\\"; exec sleep 300"], env: { LOG: "\(log)" },
                    policy: "queue" },
            """
        let cut = try Daemon(config: """
            { postgres: "host=\(namespace.hostAddress) port=\(server.port) dbname=\(name) user=baton", host: "cut", lease: "2s", shutdownGrace: "1s", actions: { \(actions) } }
            """, launcher: namespace.launcher)
        try cut.waitForLog("joined the fleet")
        let other = try Daemon(config: #"{ postgres: "\#(unix)", host: "other", lease: "2s", shutdownGrace: "1s", actions: { \#(actions) } }"#)
        try other.waitForLog("joined the fleet")

        let first = try #require(try Client(path: cut.socket).call(Request(op: .trigger, action: "long", detach: true)).run?.id)
        try Eventually.until("the first run started", within: 20) { !(try Self.starts(log)).isEmpty }
        let (_, pid) = try #require(try Self.starts(log).first)
        let died = Self.watchDeath(of: pid)
        let second = try #require(try Client(path: other.socket).call(Request(op: .trigger, action: "long", detach: true)).run?.id)
        #expect(second != first)

        try namespace.link(up: false)
        try cut.waitForLog("fenced: ")
        // The other host's reaper ends the cut host's run after its lease; the follow-up starts there.
        let ended = try Client(path: other.socket).call(Request(op: .wait, run: first)).run
        #expect(ended?.phase == .failure && ended?.reason == "host_lost")
        let starts = try Eventually.value("two runs started", within: 20, { try Self.starts(log) }) { $0.count == 2 }
        let deathTime = try #require(died.value(timeout: 20))
        // No overlap: the cut host's process was gone before the other host started the key.
        #expect(deathTime < starts[1].at, "the first run's process died at \(deathTime), the second started at \(starts[1].at)")

        try namespace.link(up: true)
        try cut.waitForLog("joined the fleet", count: 2)
        _ = try other.baton("cancel", String(second))
    }

    /// The `start` lines of the action's log: when (ns since the epoch) and which pid.
    static func starts(_ log: String) throws -> [(at: UInt64, pid: Int32)] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3, let at = UInt64(fields[1]), let pid = Int32(fields[2]) else { return nil }
            return (at, pid)
        }
    }

    /// The wall-clock time (ns) at which the process exits, learned from its pidfd.
    static func watchDeath(of pid: Int32) -> Eventual<UInt64> {
        let result = Eventual<UInt64>()
        let fd = baton_pidfd_open(pid)
        Thread.detachNewThread {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&poller, 1, -1) < 0 && errno == EINTR {}
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            result.set(UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec))
            close(fd)
        }
        return result
    }
}

/// A value another thread sets once.
final class Eventual<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value?

    func set(_ new: Value) {
        condition.lock()
        value = new
        condition.broadcast()
        condition.unlock()
    }

    func value(timeout seconds: Double) -> Value? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while value == nil && condition.wait(until: deadline) {}
        return value
    }
}
