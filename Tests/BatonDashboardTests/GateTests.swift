import BatonDashboard
@testable import BatonIPC
import Testing

/// The gate's decisions, as a table: each check refuses with its own status, in its order.
@Suite("Dashboard gate")
struct GateTests {
    static let token = String(repeating: "ab", count: 32)
    static let gate = Gate(address: ListenAddress(host: "127.0.0.1", port: 8123))
    static let sessions: Sessions = {
        var sessions = Sessions()
        let now = ContinuousClock.now
        sessions.issue(code: "c0de", now: now)
        _ = sessions.redeem(code: "c0de", token: token, now: now)
        return sessions
    }()
    static let bearer = ("Authorization", "Bearer \(token)")
    static let origin = "http://127.0.0.1:8123"

    static func head(_ method: String, _ target: String, _ fields: [(String, String)]) -> HTTPRequestHead {
        var text = "\(method) \(target) HTTP/1.1\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        guard case let .head(head, _) = HTTPRequestHead.parse(Array((text + "\r\n").utf8)) else { fatalError("bad test head \(text)") }
        return head
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var method: String
        var target: String
        var fields: [(String, String)]
        var expected: Gate.Decision
        var testDescription: String { name }
    }

    static let host = ("Host", "127.0.0.1:8123")
    static let json = [("Content-Type", "application/json"), ("Content-Length", "20")]
    static let signedOut = Gate.Decision.refuse(
        status: 401, reason: "this page is not signed in: open an address `baton dashboard` printed (press Enter where it runs for a new one)")

    static let rows: [Row] = [
        Row(name: "the page needs no session (the browser loads it, and it is the same for everyone)", method: "GET", target: "/",
            fields: [host], expected: .serve(.page)),
        Row(name: "nor do its files", method: "GET", target: "/app.js", fields: [host], expected: .serve(.asset("app.js"))),
        Row(name: "localhost names the same server", method: "GET", target: "/", fields: [("Host", "localhost:8123")], expected: .serve(.page)),
        Row(name: "the API with the session", method: "GET", target: "/api/status", fields: [host, bearer], expected: .serve(.status)),
        Row(name: "a run's page", method: "GET", target: "/runs/42", fields: [host], expected: .serve(.page)),
        Row(name: "a run's data", method: "GET", target: "/api/runs/42", fields: [host, bearer], expected: .serve(.run(42))),
        Row(name: "HEAD of the status", method: "HEAD", target: "/api/status", fields: [host, bearer], expected: .serve(.status)),
        Row(name: "the stream with the session", method: "GET", target: "/events", fields: [host, bearer], expected: .serve(.events)),
        Row(name: "another site's name (DNS rebinding)", method: "GET", target: "/", fields: [("Host", "evil.example:8123"), bearer],
            expected: .refuse(status: 421, reason: "this is the Baton dashboard at 127.0.0.1:8123 or localhost:8123, not evil.example:8123")),
        Row(name: "another port", method: "GET", target: "/", fields: [("Host", "127.0.0.1:80"), bearer],
            expected: .refuse(status: 421, reason: "this is the Baton dashboard at 127.0.0.1:8123 or localhost:8123, not 127.0.0.1:80")),
        Row(name: "the API without a session", method: "GET", target: "/api/status", fields: [host], expected: signedOut),
        Row(name: "the stream without a session", method: "GET", target: "/events", fields: [host], expected: signedOut),
        Row(name: "a session that is not live", method: "GET", target: "/api/status",
            fields: [host, ("Authorization", "Bearer \(String(repeating: "cd", count: 32))")], expected: signedOut),
        Row(name: "the session as a cookie is not a session", method: "GET", target: "/api/history",
            fields: [host, ("Cookie", "baton_dashboard=\(token)")], expected: signedOut),
        Row(name: "the session in the address is not a session", method: "GET", target: "/api/status?token=\(token)", fields: [host],
            expected: signedOut),
        Row(name: "two Authorization fields", method: "GET", target: "/api/status", fields: [host, bearer, bearer], expected: signedOut),
        Row(name: "another scheme than Bearer", method: "GET", target: "/api/status", fields: [host, ("Authorization", "Basic \(token)")],
            expected: signedOut),
        Row(name: "the scheme's name in any case", method: "GET", target: "/api/status", fields: [host, ("Authorization", "bearer \(token)")],
            expected: .serve(.status)),
        Row(name: "an unknown path", method: "GET", target: "/etc/passwd", fields: [host, bearer],
            expected: .refuse(status: 404, reason: "no such page: /etc/passwd")),
        Row(name: "a run id that is not a number", method: "GET", target: "/api/runs/1x", fields: [host, bearer],
            expected: .refuse(status: 404, reason: "no such page: /api/runs/1x")),
        Row(name: "GET of a state change", method: "GET", target: "/api/trigger", fields: [host, bearer],
            expected: .refuse(status: 405, reason: "/api/trigger takes POST", allow: "POST")),
        Row(name: "POST of a read", method: "POST", target: "/api/status", fields: [host, bearer],
            expected: .refuse(status: 405, reason: "/api/status takes GET", allow: "GET, HEAD")),
        Row(name: "a trigger from the page", method: "POST", target: "/api/trigger", fields: [host, bearer, ("Origin", origin)] + json,
            expected: .serve(.trigger)),
        Row(name: "a trigger without a session, from the page's origin", method: "POST", target: "/api/trigger",
            fields: [host, ("Origin", origin)] + json, expected: signedOut),
        Row(name: "a trigger from another site (CSRF)", method: "POST", target: "/api/trigger",
            fields: [host, bearer, ("Origin", "http://evil.example")] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: http://evil.example)")),
        Row(name: "a trigger from another port of loopback", method: "POST", target: "/api/trigger",
            fields: [host, bearer, ("Origin", "http://127.0.0.1:9999")] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: http://127.0.0.1:9999)")),
        Row(name: "a trigger without Origin", method: "POST", target: "/api/cancel", fields: [host, bearer] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: none)")),
        Row(name: "a form post", method: "POST", target: "/api/trigger",
            fields: [host, bearer, ("Origin", origin), ("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "3")],
            expected: .refuse(status: 415, reason: "send JSON (Content-Type: application/json)")),
        Row(name: "a chunked body", method: "POST", target: "/api/trigger",
            fields: [host, bearer, ("Origin", origin), ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")],
            expected: .refuse(status: 411, reason: "send the body with a Content-Length")),
        Row(name: "a body too large", method: "POST", target: "/api/trigger",
            fields: [host, bearer, ("Origin", origin), ("Content-Type", "application/json"), ("Content-Length", "16385")],
            expected: .refuse(status: 413, reason: "the body is larger than 16384 bytes")),
        Row(name: "the sign-in needs no session", method: "POST", target: "/api/session", fields: [host, ("Origin", origin)] + json,
            expected: .serve(.session)),
        Row(name: "the sign-in from another site", method: "POST", target: "/api/session", fields: [host, ("Origin", "http://evil.example")] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: http://evil.example)")),
        Row(name: "the sign-in as a form", method: "POST", target: "/api/session",
            fields: [host, ("Origin", origin), ("Content-Type", "text/plain"), ("Content-Length", "3")],
            expected: .refuse(status: 415, reason: "send JSON (Content-Type: application/json)")),
        Row(name: "the stream takes no HEAD", method: "HEAD", target: "/events", fields: [host, bearer],
            expected: .refuse(status: 405, reason: "/events takes GET", allow: "GET, HEAD")),
        Row(name: "a run's output stream with the session", method: "GET", target: "/api/runs/42/output", fields: [host, bearer],
            expected: .serve(.output(42))),
        Row(name: "a run's output stream without a session", method: "GET", target: "/api/runs/42/output", fields: [host], expected: signedOut),
        Row(name: "the output stream takes no HEAD", method: "HEAD", target: "/api/runs/42/output", fields: [host, bearer],
            expected: .refuse(status: 405, reason: "/api/runs/42/output takes GET", allow: "GET, HEAD")),
        Row(name: "a run's raw output with the session", method: "GET", target: "/api/runs/42/output.raw", fields: [host, bearer],
            expected: .serve(.rawOutput(42))),
        Row(name: "a run's raw output without a session", method: "GET", target: "/api/runs/42/output.raw", fields: [host], expected: signedOut),
        Row(name: "the session in the raw output's address is not a session", method: "GET", target: "/api/runs/42/output.raw?token=\(token)",
            fields: [host], expected: signedOut),
        Row(name: "raw output from another site's name", method: "GET", target: "/api/runs/42/output.raw", fields: [("Host", "evil.example:8123"), bearer],
            expected: .refuse(status: 421, reason: "this is the Baton dashboard at 127.0.0.1:8123 or localhost:8123, not evil.example:8123")),
        Row(name: "raw output is read, never posted", method: "POST", target: "/api/runs/42/output.raw", fields: [host, bearer, ("Origin", origin)] + json,
            expected: .refuse(status: 405, reason: "/api/runs/42/output.raw takes GET", allow: "GET, HEAD")),
        Row(name: "no other page under a run's data", method: "GET", target: "/api/runs/42/outputs", fields: [host, bearer],
            expected: .refuse(status: 404, reason: "no such page: /api/runs/42/outputs")),
        Row(name: "nor a run's page with a suffix", method: "GET", target: "/runs/42/output", fields: [host],
            expected: .refuse(status: 404, reason: "no such page: /runs/42/output")),
        Row(name: "a run id with a dot", method: "GET", target: "/api/runs/42.raw", fields: [host, bearer],
            expected: .refuse(status: 404, reason: "no such page: /api/runs/42.raw")),
    ]

    @Test("each request is served or refused as the table says", arguments: rows)
    func decide(_ row: Row) {
        #expect(Self.gate.decide(Self.head(row.method, row.target, row.fields), sessions: Self.sessions) == row.expected)
    }

    /// What the dashboard answers for raw bytes, as its server decides: the parser's refusal, or the gate's decision.
    static func answer(_ text: String) -> Gate.Decision {
        switch HTTPRequestHead.parse(Array(text.utf8)) {
        case let .head(head, _): gate.decide(head, sessions: sessions)
        case let .refused(status, reason): .refuse(status: status, reason: reason)
        case .incomplete: .refuse(status: 408, reason: "incomplete")
        }
    }

    static let post = "POST /api/trigger HTTP/1.1\r\nHost: 127.0.0.1:8123\r\nAuthorization: Bearer \(token)\r\nOrigin: \(origin)\r\nContent-Type: application/json\r\n"

    @Test("RFC 9112 on the dashboard: two Hosts, a Content-Length twice or past any Int, LF-only lines", arguments: [
        ("GET / HTTP/1.1\r\nHost: 127.0.0.1:8123\r\nHost: evil.example\r\n\r\n", Gate.Decision.refuse(status: 400, reason: "more than one Host field")),
        ("GET / HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1:8123\r\n\r\n", .refuse(status: 400, reason: "more than one Host field")),
        (post + "Content-Length: 2\r\nContent-Length: 20000\r\n\r\n", .refuse(status: 400, reason: "more than one Content-Length field")),
        (post + "Content-Length: 99999999999999999999999\r\n\r\n", .refuse(status: 413, reason: "the body is larger than 16384 bytes")),
        ("GET / HTTP/1.1\nHost: 127.0.0.1:8123\n\n", .refuse(status: 400, reason: "a line ends in a bare LF: HTTP/1.1 lines end in CRLF")),
        (post + "Content-Length: 2\r\n\r\n{}", .serve(.trigger)),
    ])
    func strictHeads(text: String, expected: Gate.Decision) {
        #expect(Self.answer(text) == expected)
    }

    @Test("a head with two Hosts is refused by the gate too, whoever parsed it")
    func twoHostsAtTheGate() {
        let head = HTTPRequestHead(method: "GET", path: "/", query: nil, version: "HTTP/1.1",
                                   fields: [.init(name: "host", value: "127.0.0.1:8123"), .init(name: "host", value: "evil.example")])
        #expect(Self.gate.decide(head, sessions: Self.sessions) == .refuse(status: 400, reason: "more than one Host field"))
    }

    struct Wildcard: CustomTestStringConvertible, Sendable {
        var name: String
        var listen: ListenAddress
        var machine: [String]
        var hosts: Set<String>
        var shown: String
        var testDescription: String { name }
    }

    /// Issue 21, item 17: a wildcard listen address answered to `0.0.0.0:PORT` only, a name no browser opens.
    @Test("a wildcard address answers to the machine's addresses and shows the first that is not loopback", arguments: [
        Wildcard(name: "IPv4", listen: ListenAddress(host: "0.0.0.0", port: 8123), machine: ["127.0.0.1", "192.0.2.2", "10.1.2.3"],
                 hosts: ["127.0.0.1:8123", "192.0.2.2:8123", "10.1.2.3:8123", "localhost:8123"], shown: "192.0.2.2:8123"),
        Wildcard(name: "IPv6", listen: ListenAddress(host: "::", port: 8123), machine: ["::1", "fd00::2"],
                 hosts: ["[::1]:8123", "[fd00::2]:8123", "localhost:8123"], shown: "[fd00::2]:8123"),
        Wildcard(name: "IPv4, loopback only", listen: ListenAddress(host: "0.0.0.0", port: 80), machine: ["127.0.0.1"],
                 hosts: ["127.0.0.1:80", "localhost:80"], shown: "127.0.0.1:80"),
        Wildcard(name: "IPv6, nothing found", listen: ListenAddress(host: "::", port: 80), machine: [], hosts: [], shown: "[::1]:80"),
        Wildcard(name: "IPv6 written out", listen: ListenAddress(host: "0:0:0:0:0:0:0:0", port: 80), machine: ["::1"],
                 hosts: ["[::1]:80", "localhost:80"], shown: "[::1]:80"),
        Wildcard(name: "not a wildcard: the machine's addresses do not count", listen: ListenAddress(host: "10.1.2.3", port: 80),
                 machine: ["127.0.0.1", "10.1.2.3"], hosts: ["10.1.2.3:80"], shown: "10.1.2.3:80"),
    ])
    func wildcard(_ row: Wildcard) {
        let gate = Gate(address: row.listen, machineAddresses: row.machine)
        #expect(gate.hosts == row.hosts)
        #expect(gate.address.description == row.shown)
    }

    @Test("on 0.0.0.0, a page from one of the machine's addresses is served and may post; 0.0.0.0 itself is no name", arguments: [
        ("192.0.2.2:8123", "http://192.0.2.2:8123", Gate.Decision.serve(.trigger)),
        ("127.0.0.1:8123", "http://127.0.0.1:8123", .serve(.trigger)),
        ("localhost:8123", "http://localhost:8123", .serve(.trigger)),
        ("127.0.0.1:8123", "http://192.0.2.2:8123", .serve(.trigger)),
        ("0.0.0.0:8123", "http://0.0.0.0:8123", .refuse(status: 421, reason:
            "this is the Baton dashboard at 127.0.0.1:8123 or 192.0.2.2:8123 or localhost:8123, not 0.0.0.0:8123")),
        ("192.0.2.2:8123", "http://192.0.2.9:8123", .refuse(status: 403, reason:
            "a request that changes something must come from the dashboard's own page (Origin: http://192.0.2.9:8123)")),
    ])
    func wildcardDecisions(host: String, origin: String, expected: Gate.Decision) {
        let gate = Gate(address: ListenAddress(host: "0.0.0.0", port: 8123), machineAddresses: ["127.0.0.1", "192.0.2.2"])
        let head = Self.head("POST", "/api/trigger", [("Host", host), Self.bearer, ("Origin", origin)] + Self.json)
        #expect(gate.decide(head, sessions: Self.sessions) == expected)
    }

    @Test("the wildcard addresses, and the machine's own through getifaddrs (loopback among them)")
    func machineAddresses() {
        #expect(ListenAddress(host: "0.0.0.0", port: 1).isWildcard && ListenAddress(host: "::", port: 1).isWildcard)
        #expect(!ListenAddress(host: "127.0.0.1", port: 1).isWildcard && !ListenAddress(host: "::1", port: 1).isWildcard)
        #expect(ListenAddress(host: "0.0.0.0", port: 0).machineAddresses().contains("127.0.0.1"))
        #expect(ListenAddress(host: "::", port: 0).machineAddresses().allSatisfy { $0.contains(":") && !$0.hasPrefix("fe80") })
        #expect(Gate(address: ListenAddress(host: "0.0.0.0", port: 8)).hosts.contains("127.0.0.1:8"))
    }

    @Test("an address other than loopback is its own only name")
    func otherAddress() {
        let gate = Gate(address: ListenAddress(host: "10.0.0.5", port: 80))
        #expect(gate.hosts == ["10.0.0.5:80"])
        let v6 = Gate(address: ListenAddress(host: "::1", port: 80))
        #expect(v6.hosts == ["[::1]:80", "localhost:80"])
    }
}
