import BatonCore
import BatonIPC
import Foundation
import Testing

/// `baton metrics`, `GET /metrics`, promtool and a real Prometheus server.
@Suite("End to end: Prometheus metrics", .serialized, .offPool)
struct MetricsEndToEndTests {
    static let config = """
        {
          socketMode: "0666",
          metrics: { listen: "127.0.0.1:0" },
          actions: {
            ok: { exec: ["true"] },
            broken: { exec: ["sh", "-c", "exit 3"] },
            slow: { exec: ["sleep", "30"], policy: "join" },
            busy: { exec: ["sleep", "30"], policy: "reject" },
          },
        }
        """

    /// A TCP connection to the metrics listener.
    final class TCP {
        let fd: Int32
        init(port: UInt16) throws {
            // `fd` is set only once connected, as in HTTPProbe: a throw after every property is
            // set runs deinit, which closed the refused socket a second time, by then perhaps
            // another thread's descriptor. The Prometheus test polls a port that is refused until
            // Prometheus listens: the likely cause of a CI run that hung 22 minutes in libpq's
            // connect (FleetLockTests.cancelInLine), its socket's number closed under it and
            // taken by something that never became readable.
            let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else {
                if socketFD >= 0 { close(socketFD) }
                throw POSIXError(.ECONNREFUSED)
            }
            fd = socketFD
        }
        deinit { close(fd) }
        func send(_ text: String) { _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        /// Everything until the server closes (or `seconds` pass).
        func readToEnd(seconds: Int = 15) -> String {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var all: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65_536)
            while case let n = buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }), n > 0 { all += buffer[..<n] }
            return String(decoding: all, as: UTF8.self)
        }
        static func exchange(_ port: UInt16, _ request: String) throws -> String {
            let connection = try TCP(port: port)
            connection.send(request)
            return connection.readToEnd()
        }
    }

    static func port(of daemon: Daemon) throws -> UInt16 {
        try daemon.waitForLog("metrics: serving http://127.0.0.1:")
        let line = daemon.stderr.split(separator: "\n").first { $0.hasPrefix("metrics: serving") } ?? ""
        return try #require(UInt16(line.split(separator: ":").last?.split(separator: "/").first ?? ""))
    }

    static func value(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test("a TCP connection refused closes its socket once: a second close would close whatever took its number meanwhile (another test's)")
    func refusedClosesOnce() throws {
        let port = try Self.freePort()
        for _ in 0..<20 {
            // The failed init's last call on this thread is its close of the socket: a second one,
            // by a deinit, finds the number free and says EBADF (or, in a busy process, closes
            // the descriptor another thread opened in between: libpq's, in a CI run that hung).
            errno = 0
            var after: Int32 = 0
            do {
                _ = try TCP(port: port)
                Issue.record("connected to \(port), where nothing should listen")
                return
            } catch {
                after = errno
            }
            #expect(after != EBADF, "the refused socket was closed twice")
        }
    }

    @Test("runs, durations, in-flight runs and triggers by decision are counted; the socket and HTTP agree; promtool accepts the text")
    func counted() throws {
        let daemon = try Daemon(config: Self.config)
        let port = try Self.port(of: daemon)
        for _ in 0..<2 { #expect(try daemon.baton("run", "ok").code == 0) }
        #expect(try daemon.baton("run", "broken").code == 1)
        #expect(try daemon.baton("run", "slow", "--detach").code == 0)
        #expect(try daemon.baton("run", "slow", "--detach").code == 0)
        #expect(try daemon.baton("run", "busy", "--detach").code == 0)
        #expect(try daemon.baton("run", "busy").code == 75)
        let denied = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", daemon.socket, "run", "ok"])
        #expect(denied.code == 77, "\(denied.stderr)")

        let viaSocket = try daemon.baton("metrics")
        #expect(viaSocket.code == 0, "\(viaSocket.stderr)")
        let text = viaSocket.stdout
        let expected: [(String, Double)] = [
            (#"baton_runs_total{action="ok",outcome="success",reason="exit"}"#, 2),
            (#"baton_runs_total{action="broken",outcome="failure",reason="exit"}"#, 1),
            (#"baton_run_duration_seconds_count{action="ok"}"#, 2),
            (#"baton_run_duration_seconds_bucket{action="ok",le="+Inf"}"#, 2),
            (#"baton_triggers_total{action="ok",decision="created"}"#, 2),
            (#"baton_triggers_total{action="ok",decision="denied"}"#, 1),
            (#"baton_triggers_total{action="slow",decision="joined"}"#, 1),
            (#"baton_triggers_total{action="busy",decision="rejected"}"#, 1),
            (#"baton_runs_in_flight{action="slow"}"#, 1),
            (#"baton_runs_in_flight{action="ok"}"#, 0),
            (#"baton_runs_queued{action="busy"}"#, 0),
            ("baton_store_unavailable", 0),
            ("baton_connections", 1),
            (#"baton_build_info{version="\#(BatonVersion.current)"}"#, 1),
        ]
        for (series, number) in expected { #expect(Self.value(text, series) == number, "\(series)") }
        #expect((Self.value(text, "baton_store_commit_items_count") ?? 0) >= 5)
        #expect((Self.value(text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((Self.value(text, "process_open_fds") ?? 0) > 5)
        #expect(abs((Self.value(text, "process_start_time_seconds") ?? 0) - Date().timeIntervalSince1970) < 600)

        let http = try TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(http.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(http.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
        let body = String(http[(http.range(of: "\r\n\r\n")?.upperBound ?? http.endIndex)...])
        #expect(Self.value(body, #"baton_runs_total{action="ok",outcome="success",reason="exit"}"#) == 2)
        #expect(Self.value(body, "baton_connections") == 0)

        let file = daemon.directory + "/metrics.txt"
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try execute("/bin/sh", ["-c", "promtool check metrics < \(file)"])
        #expect(check.code == 0, "promtool: \(check.stdout) \(check.stderr)")
        #expect(try daemon.baton("cancel", "slow").code == 0)
        #expect(try daemon.baton("cancel", "busy").code == 0)
    }

    @Test("the HTTP responder answers /metrics only: 404, 405 with Allow, 400, 431, 505, 408 for a client that stalls, HEAD without a body")
    func strictHTTP() throws {
        let daemon = try Daemon(config: Self.config)
        let port = try Self.port(of: daemon)
        let head = try TCP.exchange(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"))
        #expect(try TCP.exchange(port, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        let post = try TCP.exchange(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405 ") && post.contains("\r\nAllow: GET, HEAD\r\n"))
        #expect(try TCP.exchange(port, "GET /metrics HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        #expect(try TCP.exchange(port, "GET /metrics HTTP/3\r\nHost: x\r\n\r\n").hasPrefix("HTTP/1.1 505 "))
        #expect(try TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 9_000)).hasPrefix("HTTP/1.1 431 "))
        let stalled = try TCP(port: port)
        stalled.send("GET /metrics HTTP/1.1\r\n")
        #expect(stalled.readToEnd().hasPrefix("HTTP/1.1 408 "))
        #expect(try daemon.baton("run", "ok").code == 0)
    }

    @Test("connections past the limit get 503 at once, and idle ones never hold up the daemon or a scrape after they time out")
    func connectionLimit() throws {
        let daemon = try Daemon(config: Self.config)
        let port = try Self.port(of: daemon)
        let idle = try (0..<64).map { _ in try TCP(port: port) }
        #expect(try TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").hasPrefix("HTTP/1.1 503 "))
        // The socket is served meanwhile: the HTTP thread is apart.
        #expect(try daemon.baton("run", "ok").code == 0)
        for connection in idle { #expect(connection.readToEnd().hasPrefix("HTTP/1.1 408 ")) }
        #expect(try TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
    }

    @Test("a real Prometheus scrapes batond, and its query API answers a run counter with the right value")
    func prometheusScrapes() async throws {
        let daemon = try Daemon(config: Self.config)
        let port = try Self.port(of: daemon)
        for _ in 0..<3 { #expect(try daemon.baton("run", "ok").code == 0) }
        let web = try Self.freePort()
        let directory = daemon.directory + "/prometheus"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try """
            global: { scrape_interval: 1s }
            scrape_configs:
              - job_name: batond
                static_configs: [{ targets: ["127.0.0.1:\(port)"] }]
            """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
        prometheus.arguments = ["--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                                "--web.listen-address=127.0.0.1:\(web)", "--log.level=warn"]
        prometheus.standardOutput = FileHandle.nullDevice
        prometheus.standardError = FileHandle.nullDevice
        try prometheus.run()
        defer { prometheus.terminate(); prometheus.waitUntilExit() }
        let query = #"/api/v1/query?query=baton_runs_total%7Baction%3D%22ok%22%2Coutcome%3D%22success%22%7D"#
        var answer = ""
        await Eventually.untilAwaited("Prometheus saw 3 successful runs of ok: \(answer)", within: 60) {
            answer = (try? await onThread { try TCP.exchange(web, "GET \(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") }) ?? ""
            return answer.contains(#""3"]"#)
        }
        #expect(answer.contains(#""job":"batond""#), "\(answer)")
    }

    @Test("the example Grafana dashboard is valid JSON and queries only series batond exposes")
    func dashboard() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/grafana-dashboard.json")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let panels = try #require(json["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.count >= 8)
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "ok").code == 0)
        let text = try daemon.baton("metrics").stdout
        let families = Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) })
        for expression in expressions {
            let names = expression.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
                .filter { $0.hasPrefix("baton_") || $0.hasPrefix("process_") }
            #expect(!names.isEmpty, "\(expression)")
            for name in names {
                let family = ["_bucket", "_sum", "_count"].reduce(String(name)) { $0.hasSuffix($1) ? String($0.dropLast($1.count)) : $0 }
                #expect(families.contains(family), "\(name) in \(expression)")
            }
        }
    }

    /// A port nothing listens on now (bound to 0 on loopback, read back, closed).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw POSIXError(.EADDRINUSE) }
        return UInt16(bigEndian: address.sin_port)
    }
}
