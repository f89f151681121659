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

    /// RFC 9112: more than one Host (§3.2), a Content-Length that is not one number (§6.3), or one
    /// beside Transfer-Encoding (§6.1, how requests are smuggled past a proxy), and line ends other
    /// than CRLF (§2.2) are each a 400, decided as soon as the bytes show it: a head of LF-only lines
    /// has no CRLF CRLF to end it and used to wait for the 408.
    @Test("RFC 9112's refusals: a second Host, a Content-Length not one number, bare LF or CR, at once", arguments: [
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", "more than one Host"),
        ("GET / HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n", "more than one Host"),
        ("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", "more than one Host"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "more than one Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", "more than one Content-Length"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", "Content-Length is not a number"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", "Content-Length is not a number"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", "Content-Length is not a number"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", "Content-Length is not a number"),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", "Content-Length is not a number"),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "both Content-Length and Transfer-Encoding"),
        ("GET / HTTP/1.1\nHost: a\n\n", "a line ends in a bare LF"),
        ("GET / HTTP/1.1\n", "a line ends in a bare LF"),
        ("GET /metrics HTTP/1.1\r\nHost: a\n", "a line ends in a bare LF"),
        ("GET / HTTP/1.1\r\nHost: a\r\n\n", "a line ends in a bare LF"),
        ("GET / HTTP/1.1\rHost: a\r\n\r\n", "a bare CR"),
        ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", "a bare CR"),
    ])
    func strict(text: String, reason: String) {
        guard case let .refused(status, got) = parse(text) else { Issue.record("not refused: \(parse(text))"); return }
        #expect(status == 400)
        #expect(got.hasPrefix(reason), "\(got)")
    }

    @Test("what RFC 9112 allows is taken: one Content-Length, fields other than Host repeated, LFs in the body, a CR still to be followed", arguments: [
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\n\r\n", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n{\n}\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
    ])
    func allowed(text: String) {
        guard case .head = parse(text) else { Issue.record("\(parse(text))"); return }
    }

    @Test("a CR at the end of what came so far may be the start of a CRLF: more is asked for")
    func crAtTheEnd() {
        #expect(parse("GET / HTTP/1.1\r") == .incomplete)
        #expect(parse("GET / HTTP/1.1\r\nHost: a\r\n\r") == .incomplete)
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
