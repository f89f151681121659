import BatonIPC
import Testing

@Suite("HTTP request heads, parsed strictly")
struct HTTPRequestHeadTests {
    func parse(_ text: String, limit: Int = 8_192, maxFields: Int = 64) -> HTTPRequestHead.Parse {
        HTTPRequestHead.parse(Array(text.utf8), limit: limit, maxFields: maxFields)
    }

    @Test("a GET with a query and fields: method, path, query, version, fields lowercased and trimmed, length")
    func good() {
        let text = "GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9469\r\nUser-Agent:  Prometheus/2.42 \r\n\r\nBODY"
        guard case let .head(head, length) = parse(text) else { Issue.record("\(parse(text))"); return }
        #expect(head.method == "GET" && head.path == "/metrics" && head.query == "x=1" && head.version == "HTTP/1.1")
        #expect(head.fields == [.init(name: "host", value: "127.0.0.1:9469"), .init(name: "user-agent", value: "Prometheus/2.42")])
        #expect(head.field("user-agent") == "Prometheus/2.42")
        #expect(length == text.utf8.count - 4)
        // HTTP/1.0 needs no Host.
        guard case .head = parse("HEAD / HTTP/1.0\r\n\r\n") else { Issue.record("HTTP/1.0"); return }
    }

    @Test("a head not yet complete asks for more; one past the limit is refused with 431")
    func incomplete() {
        #expect(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(parse("") == .incomplete)
        let long = "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 200)
        guard case .refused(431, _) = parse(long, limit: 128) else { Issue.record("\(parse(long, limit: 128))"); return }
        let many = "GET / HTTP/1.1\r\nHost: x\r\n" + (0..<5).map { "X-\($0): y\r\n" }.joined() + "\r\n"
        guard case .refused(431, _) = parse(many, maxFields: 5) else { Issue.record("\(parse(many, maxFields: 5))"); return }
        guard case .head = parse(many, maxFields: 6) else { Issue.record("6 fields"); return }
    }

    @Test("malformed heads are refused with 400 (or 505 for another HTTP version), each named")
    func refused() {
        let cases: [(String, Int)] = [
            ("GET /metrics HTTP/1.1\r\n\r\n", 400),                       // no Host in HTTP/1.1
            ("GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 400),            // two spaces
            ("GET http://x/metrics HTTP/1.1\r\nHost: x\r\n\r\n", 400),     // absolute form
            ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),                    // not a token
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET / FTP/1.0\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),                   // space before the colon
            ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),         // obsolete line folding
            ("GET / HTTP/1.1\r\nHost: x\nY: z\r\n\r\n", 400),              // a bare LF inside
            ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
            ("GET /\u{1}x HTTP/1.1\r\nHost: x\r\n\r\n", 400),              // control byte in the target
            ("\r\n\r\n", 400),
        ]
        for (text, status) in cases {
            guard case let .refused(got, reason) = parse(text) else { Issue.record("accepted: \(text.debugDescription)"); continue }
            #expect(got == status, "\(text.debugDescription)")
            #expect(!reason.isEmpty)
        }
    }

    @Test("listen addresses: IPv4, bracketed IPv6, localhost; anything else named in the error")
    func listenAddresses() throws {
        #expect(try ListenAddress.parse("127.0.0.1:9469").get() == ListenAddress(host: "127.0.0.1", port: 9469))
        #expect(try ListenAddress.parse("[::1]:0").get() == ListenAddress(host: "::1", port: 0))
        #expect(try ListenAddress.parse("localhost:80").get().host == "127.0.0.1")
        #expect(try ListenAddress.parse("[::1]:1").get().isLoopback)
        #expect(try !ListenAddress.parse("10.0.0.1:1").get().isLoopback)
        for bad in ["9469", "127.0.0.1", "127.0.0.1:99999", "::1:80", "example.com:80", ":80", "[::1]80", "1.2.3.4:-1"] {
            guard case let .failure(error) = ListenAddress.parse(bad) else { Issue.record("accepted \(bad)"); continue }
            #expect(error.description.contains("\"\(bad)\""))
        }
    }
}
