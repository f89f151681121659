import BatonCore
import BatonIPC
import Foundation
import Testing

@Suite("End to end: hostile clients", .serialized, .offPool)
struct HostileTests {
    static let config = #"{ socketMode: "0666", requestTimeout: "1s", maxConnectionsPerUser: 5, actions: { a: { exec: ["true"] } } }"#

    /// A raw connection for sending what a well-behaved client would not.
    final class Raw {
        let fd: Int32
        init(_ path: String) throws { fd = try UnixSocket.connect(path: path) }
        deinit { close(fd) }
        func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        /// Everything until the daemon closes the connection (or 60 s without a byte: a safety net
        /// for a loaded machine, not a timing claim).
        func readToEnd() -> String {
            var timeout = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                all += buffer[..<n]
            }
            return String(decoding: all, as: UTF8.self)
        }
    }

    /// Whether batond was built with a sanitizer, whose shadow memory multiplies its footprint.
    static let sanitized: Bool = {
        guard let binary = FileManager.default.contents(atPath: Binaries.batond) else { return false }
        return binary.range(of: Data("ThreadSanitizer".utf8)) != nil || binary.range(of: Data("AddressSanitizer".utf8)) != nil
    }()

    /// batond's resident memory in KiB.
    static func rss(_ daemon: Daemon) -> Int {
        ProcStatus.number("VmRSS", of: daemon.process.processIdentifier) ?? 0
    }

    /// Issue 12's freeze: `^(a+)+$` against `aaaa…b` took 72 s at 20 characters in a backtracking
    /// engine, and four such triggers stalled every other request and SIGTERM.
    @Test("catastrophic-backtracking params are refused at once; status, other actions and SIGTERM are unaffected")
    func patternBomb() throws {
        let daemon = try Daemon(config: """
            { socketMode: "0666", actions: { r: { exec: ["true"], params: { x: { pattern: "^(a+)+$" } } }, a: { exec: ["true"] } } }
            """)
        #expect(daemon.stderr.contains("actions.r.params.x.pattern: \"^(a+)+$\" repeats a repetition"))
        let bombs = try (0..<8).map { index in
            let client = try Client(path: daemon.socket)
            let length = [16, 18, 20, 24, 64, 256, 1_024, 4_095][index]
            try client.send(Request(op: .trigger, action: "r", params: ["x": String(repeating: "a", count: length) + "b"]))
            return client
        }
        // Answered within 10 s or failed (a backtracking matcher would hold them for hours).
        let status = try Client(path: daemon.socket)
        try status.send(Request(op: .status))
        #expect(try status.receive(timeout: .seconds(10))?.ok == true)
        let other = try Client(path: daemon.socket)
        try other.send(Request(op: .trigger, action: "a"))
        var answer = try other.receive(timeout: .seconds(10))
        while let line = answer, line.ok == nil { answer = try other.receive(timeout: .seconds(10)) }
        #expect(answer?.run?.phase == .success)
        for client in bombs {
            let answer = try #require(try client.receive(timeout: .seconds(10)))
            #expect(answer.error?.code == .badRequest)
            #expect(answer.error?.message.contains("does not match ^(a+)+$") == true)
        }
        #expect(try Client(path: daemon.socket).call(Request(op: .trigger, action: "r", params: ["x": "aaaa"])).run?.phase == .success)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    @Test("a client that sends a request a byte at a time and stops is closed after requestTimeout; others are served")
    func slowRequest() throws {
        let daemon = try Daemon(config: Self.config)
        let slow = try Raw(daemon.socket)
        slow.send(Array(#"{"op":"pi"#.utf8))
        #expect(try Client(path: daemon.socket).call(Request(op: .ping)).ok == true)
        let answer = slow.readToEnd()
        #expect(answer.contains("request line not finished within 1.0s"), "\(answer)")
        #expect(try Client(path: daemon.socket).call(Request(op: .ping)).ok == true)
    }

    @Test("garbage, invalid UTF-8, deep nesting and an oversized line each get bad_request; the daemon lives on")
    func badInput() throws {
        // Not the suite's 1 s request timeout: a 1.1 MB line may take longer than that to arrive on a
        // loaded machine (seen under ThreadSanitizer), and this test is about bad lines, not slow ones.
        let daemon = try Daemon(config: Self.config.replacingOccurrences(of: #"requestTimeout: "1s""#, with: #"requestTimeout: "60s""#))
        let raw = try Raw(daemon.socket)
        raw.send([0xFF, 0xFE, 0x00, 0x7B, 0x22, 0xC3, 0x28, 0x0A])                 // invalid UTF-8 and a NUL
        raw.send(Array((String(repeating: "[", count: 100_000) + "\n").utf8))      // deep nesting
        raw.send(Array((#"{"op":"trigger","action":"#.utf8)) + Array(repeating: UInt8(ascii: "x"), count: 1_100_000) + [10])
        raw.send(Array(#"{"op":"ping","id":9}"#.utf8) + [10])
        shutdown(raw.fd, Int32(SHUT_WR))
        let lines = raw.readToEnd().split(separator: "\n")
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.prefix(3).allSatisfy { $0.contains("\"bad_request\"") })
        #expect(lines.last?.contains("\"id\":9") == true)
        #expect(try Client(path: daemon.socket).call(Request(op: .ping)).ok == true)
    }

    @Test("a client that never reads its answers is dropped when its unsent output passes the limit")
    func neverReads() throws {
        let daemon = try Daemon(config: Self.config)
        let before = Self.rss(daemon)
        let greedy = try Raw(daemon.socket)
        // Status requests (each answered with ~700 bytes) and never a read, until more than 16 MiB piles up.
        let request = Array(#"{"op":"status"}"#.utf8) + [10]
        var batch: [UInt8] = []
        for _ in 0..<1_000 { batch += request }
        var flags = fcntl(greedy.fd, F_GETFL)
        flags |= O_NONBLOCK
        _ = fcntl(greedy.fd, F_SETFL, flags)
        var dropped = false
        // ~24,000 answers must pile up: 16 s in a normal build, 49 s alone under ThreadSanitizer and
        // over a minute with the other suites beside it (CI failed at 60 s). The bound is for a hang.
        let deadline = Date().addingTimeInterval(240)
        while !dropped && Date() < deadline {
            let n = batch.withUnsafeBytes { Glibc.send(greedy.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno != EAGAIN { dropped = true }
            if n < 0 && errno == EAGAIN {
                // Full: wait until batond reads again (or drops it), as a writer would.
                var writable = pollfd(fd: greedy.fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&writable, 1, 1_000)
            }
        }
        #expect(dropped, "the daemon kept a client that never reads")
        #expect(try Client(path: daemon.socket).call(Request(op: .ping)).ok == true)
        // Bounded: without the limits a client like this grew batond by gigabytes (a task per
        // request it never read); the bound leaves room for sanitizer builds' larger footprint.
        let grown = Self.rss(daemon) - before
        let bound = Self.sanitized ? 1_500_000 : 300_000
        #expect(grown < bound, "batond grew by \(grown) KiB for one greedy client")
    }

    /// Issue 12, item 9: 100 watchers that never read, with 2,000 runs, took batond from 29 MB to 1.7 GB.
    @Test("watchers that never read are dropped at their own, smaller limit; batond's memory stays bounded and triggers go on")
    func slowWatchers() throws {
        let daemon = try Daemon(config: #"{ socketMode: "0666", maxConcurrentRuns: 4, actions: { a: { exec: ["true"], params: { k: {} }, keyParams: ["k"] } } }"#)
        let before = Self.rss(daemon)
        // 50 watchers, 600 runs with a 3 KB param: ~7 MB of updates each, far past the 1 MiB limit
        // (the issue's 100 × 2,000 runs make the same point, but load a debug build for a minute).
        let watchers = try (0..<50).map { _ in
            let raw = try Raw(daemon.socket)
            var size: Int32 = 4_096
            setsockopt(raw.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(raw.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            raw.send(Array(#"{"op":"watch"}"#.utf8) + [10])
            return raw
        }
        // Every watcher is subscribed (its "watching" event came) before the runs begin.
        for raw in watchers {
            var byte: UInt8 = 0
            while read(raw.fd, &byte, 1) == 1, byte != 10 {}
        }
        let client = try Client(path: daemon.socket)
        let padding = String(repeating: "x", count: 3_000)
        for batch in 0..<6 {
            for index in 0..<100 { try client.send(Request(op: .trigger, action: "a", params: ["k": "\(batch)-\(index)-\(padding)"], detach: true)) }
            for _ in 0..<100 { #expect(try client.receive(timeout: .seconds(30))?.ok == true) }
        }
        // Every watcher fell behind by more than its limit and was closed.
        let closed = watchers.filter { raw in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(raw.fd, $0.baseAddress, $0.count) }
                if n == 0 { return true }
                if n < 0 { return false }
            }
        }
        #expect(closed.count == 50)
        let grown = Self.rss(daemon) - before
        let bound = Self.sanitized ? 1_500_000 : 200_000
        #expect(grown < bound, "batond grew by \(grown) KiB for 50 watchers that never read")
        #expect(try Client(path: daemon.socket).call(Request(op: .trigger, action: "a", params: ["k": "last"])).run?.phase == .success)
    }

    /// Issue 12, item 12: at 20,600 connections batond hit its open-file limit, sent no `busy`, and
    /// a new client hung in the kernel's queue.
    @Test("the open-file limit: raised where the hard limit allows, and connections beyond it are told busy, not left hanging")
    func openFileLimit() throws {
        let directory = NSTemporaryDirectory() + "baton-nofile-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wrapper = directory + "/batond"
        try installExecutable("#!/bin/sh\nexec /usr/bin/prlimit --nofile=200:300 \(Binaries.batond) \"$@\"\n", at: wrapper)
        try #"{ socketMode: "0666", maxConcurrentRuns: 2, actions: { a: { exec: ["true"] } } }"#
            .write(toFile: directory + "/c.json5", atomically: true, encoding: .utf8)
        let daemon = try Daemon(binary: wrapper, configPath: directory + "/c.json5", directory: directory)
        // Soft 200 raised to the hard 300; 300 - (2 runs × 6 + 128) = 160 connections fit.
        try daemon.waitForLog("the open-file limit (300) leaves room for 160 connections")
        var clients = try (0..<200).map { _ in try Raw(daemon.socket) }
        // Each answers a ping, or was told at once that there is no room, and closed.
        let answers = clients.map { raw -> String in
            raw.send(Array(#"{"op":"ping"}"#.utf8) + [10])
            var buffer = [UInt8](repeating: 0, count: 4_096)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(raw.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let n = buffer.withUnsafeMutableBytes { read(raw.fd, $0.baseAddress, $0.count) }
            return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : ""
        }
        #expect(answers.filter { $0.contains("\"ok\":true") }.count == 160)
        #expect(answers.filter { $0.contains("\"busy\"") }.count == 40)
        clients.removeAll()
        Eventually.until("a ping answered once the clients are gone", within: 30) { (try? Client(path: daemon.socket).call(Request(op: .ping)))?.ok == true }
    }

    @Test("maxConnections bounds connections from everyone, root too; the next is told why, and slots come back")
    func totalLimit() throws {
        let daemon = try Daemon(config: #"{ maxConnections: 3, actions: { a: { exec: ["true"] } } }"#)
        let held = try (0..<3).map { _ in try Client(path: daemon.socket) }
        // Each held connection is registered once it has been answered.
        for client in held { #expect(try client.call(Request(op: .ping)).ok == true) }
        let refused = try Raw(daemon.socket).readToEnd()
        #expect(refused.contains("batond has too many connections"), "\(refused)")
        _ = consume held
        Eventually.until("a ping answered once the held connections are gone", within: 30) { (try? Client(path: daemon.socket).call(Request(op: .ping)).ok) == true }
    }

    @Test("one uid may hold maxConnectionsPerUser connections; the next is told why and closed, others still get in")
    func connectionLimit() throws {
        let daemon = try Daemon(config: Self.config)
        chmod(daemon.directory, 0o755)
        let script = """
            import socket, sys
            held = []
            for i in range(6):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
            held[5].settimeout(5)
            print(held[5].recv(4096).decode())
            held[0].sendall(b'{"op":"ping"}\\n'); held[0].settimeout(5)
            print(held[0].recv(4096).decode())
            """
        let result = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, daemon.socket])
        #expect(result.stdout.contains("uid 65534 has 5 connections open to batond, its limit"), "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("\"ok\":true"))
        // root is not limited, and the slots come back when nobody's connections close.
        #expect(try Client(path: daemon.socket).call(Request(op: .ping)).ok == true)
        let again = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, daemon.socket])
        #expect(again.stdout.contains("its limit"))
    }

    @Test("at the per-user connection limit, baton status and baton run say batond's line naming the limit and exit 75 (they said it closed the connection)")
    func connectionLimitToldByCLI() throws {
        let daemon = try Daemon(config: Self.config)
        chmod(daemon.directory, 0o755)
        // Five connections held, then the CLI as the same user, once with each client (one-shot and streaming).
        let script = """
            import socket, subprocess, sys
            held = []
            for i in range(5):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
            for command in (["status"], ["run", "a"]):
                done = subprocess.run([sys.argv[2], "--socket", sys.argv[1]] + command, capture_output=True, text=True)
                print(done.returncode, done.stderr.strip().replace("\\n", " | "))
            """
        let result = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script,
                                                      daemon.socket, Binaries.baton])
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stdout) \(result.stderr)")
        for line in lines {
            #expect(line.hasPrefix("75 Error: uid 65534 has 5 connections open to batond, its limit"), "\(line)")
            #expect(!line.contains("closed the connection"), "\(line)")
        }
    }
}
