@testable import batond
import BatonCore
import Foundation
import Glibc
import Testing

/// Run output to the journal: the native protocol's datagram, and the sink on a real socket.
@Suite("Journal")
struct JournalTests {
    static let line = OutputLine(runID: 42, action: "deploy", key: "deploy env=prod", stream: .stderr, bytes: Array("it broke".utf8))

    @Test("fields as NAME=value lines, in order; a value with a newline in the length-prefixed form")
    func datagram() {
        let plain = JournalDatagram.encode([("MESSAGE", Array("hello".utf8)), ("PRIORITY", Array("6".utf8))])
        #expect(plain == Array("MESSAGE=hello\nPRIORITY=6\n".utf8))
        let multi = JournalDatagram.encode([("MESSAGE", Array("a\nb".utf8))])
        #expect(multi == Array("MESSAGE\n".utf8) + [3, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\n".utf8))
        let empty = JournalDatagram.encode([("MESSAGE", [])])
        #expect(empty == Array("MESSAGE=\n".utf8))
    }

    @Test("field names are journald's: upper case, digits and underscores, no leading underscore or digit", arguments: [
        ("MESSAGE", true), ("BATON_RUN_ID", true), ("A1", true), ("_PID", false), ("1A", false), ("message", false),
        ("", false), ("A-B", false), (String(repeating: "A", count: 65), false),
    ])
    func names(_ name: String, _ valid: Bool) {
        #expect(JournalDatagram.isValidName(name) == valid)
    }

    @Test("a line's fields: the action as identifier, stderr at warning, the run's id, action, key and stream")
    func fields() {
        let fields = Dictionary(uniqueKeysWithValues: JournalDatagram.fields(of: Self.line).map { ($0.name, String(decoding: $0.value, as: UTF8.self)) })
        #expect(fields == ["MESSAGE": "it broke", "PRIORITY": "4", "SYSLOG_IDENTIFIER": "deploy", "BATON_RUN_ID": "42",
                           "BATON_ACTION": "deploy", "BATON_KEY": "deploy env=prod", "BATON_STREAM": "stderr"])
        var stdout = Self.line
        stdout.stream = .stdout
        #expect(JournalDatagram.fields(of: stdout).first { $0.name == "PRIORITY" }?.value == Array("6".utf8))
    }

    /// A datagram socket bound at a new path, as journald's.
    static func listener(at given: String? = nil) throws -> (fd: Int32, path: String) {
        let path = given ?? NSTemporaryDirectory() + "baton-journal-" + UUID().uuidString
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        return (fd, path)
    }

    @Test("the sink sends each line as one datagram journald can parse; with no socket there is no sink")
    func sink() throws {
        let (fd, path) = try Self.listener()
        defer { close(fd); unlink(path) }
        let sink = try #require(JournalSink(path: path))
        sink.write(Self.line)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        #expect(n > 0 && Array(buffer[..<n]) == JournalDatagram.encode(JournalDatagram.fields(of: Self.line)))
        #expect(sink.lost.withLock { $0 } == 0)
        #expect(JournalSink(path: path + "-none") == nil)
    }

    @Test("a journald restarted on a new socket at the same path gets the next line: the sink connects again")
    func restarted() throws {
        let first = try Self.listener()
        let sink = try #require(JournalSink(path: first.path))
        sink.write(Self.line)
        // The old socket shut, then closed: and still held elsewhere, as a child another test
        // forks holds every fd of this process until its exec. A socket only closed lived on
        // there, took the next line and lost it (seen once under CI's load: the recv below found
        // nothing and nothing was counted lost); shut for reading, it refuses it (EPIPE), and the
        // sink connects again.
        let held = dup(first.fd)
        defer { close(held) }
        shutdown(first.fd, Int32(SHUT_RDWR))
        close(first.fd)
        unlink(first.path)
        let second = try Self.listener(at: first.path)
        defer { close(second.fd); unlink(second.path) }
        sink.write(Self.line)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(second.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        #expect(n > 0, "the line after journald's restart was lost")
        #expect(sink.lost.withLock { $0 } == 0)
    }

    @Test("a journal that does not read loses lines, counted; the writer never blocks")
    func full() throws {
        let (fd, path) = try Self.listener()
        defer { close(fd); unlink(path) }
        let sink = try #require(JournalSink(path: path))
        // Far more than a datagram socket's queue holds (net.unix.max_dgram_qlen, 512 by default):
        // with a blocking send the test would hang here.
        for _ in 0..<5_000 { sink.write(Self.line) }
        #expect(sink.lost.withLock { $0 } > 0)
    }
}
