import BatonCore
import Foundation
import Glibc
import Testing

/// A datagram socket where a test's batond believes journald listens: it reads each entry's
/// `NAME=value` fields (the length-prefixed form is not needed here: no value holds a newline).
final class FakeJournal: @unchecked Sendable {
    let path: String
    /// Only the test's thread reads it.
    private let fd: Int32

    init() throws {
        path = NSTemporaryDirectory() + "baton-journal-" + UUID().uuidString.prefix(8)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind: \(errno)")
        var size: Int32 = 8 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Entries in the order they came, until `done` holds for those read so far (or 30 s pass).
    func entries(until done: ([[String: String]]) -> Bool) -> [[String: String]] {
        var entries: [[String: String]] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(30)
        while !done(entries), Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { continue }
            var entry: [String: String] = [:]
            for line in buffer[..<n].split(separator: UInt8(ascii: "\n")) {
                guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { continue }
                entry[String(decoding: line[..<equals], as: UTF8.self)] = String(decoding: line[(equals + 1)...], as: UTF8.self)
            }
            entries.append(entry)
        }
        return entries
    }
}

/// Issue 37, item 15: every journal entry about a run names it by `BATON_RUN_ID`, its output
/// follows its `loading` line, and each output line carries the action's pid.
@Suite("End to end: the journal", .offPool)
struct JournalEndToEndTests {
    /// A few lines only: what batond sends at once is dropped when the socket's queue is full, and
    /// a container's `net.unix.max_dgram_qlen` may be 10 (journald's is 512).
    /// The lines' pid is the attempt's leader: the action's process group (its `baton-shim`, or the action itself without one).
    @Test("journalctl BATON_RUN_ID=1 would list the run's transitions and its output lines, in order, the lines with the action's group")
    func oneRun() async throws {
        let journal = try FakeJournal()
        let daemon = try Daemon(config: """
            { actions: { talk: { exec: ["sh", "-c", "echo pgid $(cut -d' ' -f5 /proc/$$/stat); for i in 0 1 2 3 4; do echo line $i; done"] } } }
            """, environment: ["BATON_JOURNAL_SOCKET": journal.path, "JOURNAL_STREAM": "stderr"])
        defer { daemon.stop() }
        let ran = try await run(Binaries.baton, ["--socket", daemon.socket, "run", "talk"])
        #expect(ran.code == 0, "\(ran.stderr)")
        let all = journal.entries { $0.contains { $0["BATON_RUN_ID"] == "1" && $0["BATON_PHASE"] == "success" } }
        let entries = all.filter { $0["BATON_RUN_ID"] == "1" }
        let phases = entries.compactMap { $0["BATON_PHASE"] }
        #expect(phases == ["queued", "loading", "success"], "transitions: \(phases)")
        #expect(entries.filter { $0["BATON_PHASE"] != nil }.allSatisfy { $0["BATON_RUN"] == "1" && $0["SYSLOG_IDENTIFIER"] == "batond" })
        let lines = entries.filter { $0["SYSLOG_IDENTIFIER"] == "talk" }
        let pid = try #require(lines.first?["MESSAGE"]?.split(separator: " ").last.map(String.init))
        #expect(lines.map { $0["MESSAGE"] ?? "" } == ["pgid \(pid)"] + (0..<5).map { "line \($0)" })
        #expect(lines.allSatisfy { $0["SYSLOG_PID"] == pid && $0["BATON_ACTION"] == "talk" && $0["BATON_KEY"] == "talk" })
        let order = entries.map { $0["BATON_PHASE"] ?? "line" }
        #expect(order == ["queued", "loading"] + Array(repeating: "line", count: 6) + ["success"], "order: \(order.prefix(6))…")
    }
}
