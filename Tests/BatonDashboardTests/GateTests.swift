import BatonDashboard
import BatonIPC
import Testing

/// The gate's decisions, as a table: each check refuses with its own status, in its order.
@Suite("Dashboard gate")
struct GateTests {
    static let token = String(repeating: "ab", count: 32)
    static let gate = Gate(token: token, address: ListenAddress(host: "127.0.0.1", port: 8123))
    static let cookie = "baton_dashboard=\(token)"
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

    static let rows: [Row] = [
        Row(name: "the page with the cookie", method: "GET", target: "/", fields: [host, ("Cookie", cookie)], expected: .serve(.page)),
        Row(name: "localhost names the same server", method: "GET", target: "/", fields: [("Host", "localhost:8123"), ("Cookie", cookie)], expected: .serve(.page)),
        Row(name: "the cookie among others", method: "GET", target: "/api/status", fields: [host, ("Cookie", "a=1; \(cookie); b=2")], expected: .serve(.status)),
        Row(name: "a run's page", method: "GET", target: "/runs/42", fields: [host, ("Cookie", cookie)], expected: .serve(.page)),
        Row(name: "a run's data", method: "GET", target: "/api/runs/42", fields: [host, ("Cookie", cookie)], expected: .serve(.run(42))),
        Row(name: "HEAD of the page", method: "HEAD", target: "/", fields: [host, ("Cookie", cookie)], expected: .serve(.page)),
        Row(name: "the token in the address is traded for the cookie", method: "GET", target: "/?token=\(token)", fields: [host],
            expected: .exchange(location: "/")),
        Row(name: "another site's name (DNS rebinding)", method: "GET", target: "/", fields: [("Host", "evil.example:8123"), ("Cookie", cookie)],
            expected: .refuse(status: 421, reason: "this is the Baton dashboard at 127.0.0.1:8123 or localhost:8123, not evil.example:8123")),
        Row(name: "another port", method: "GET", target: "/", fields: [("Host", "127.0.0.1:80"), ("Cookie", cookie)],
            expected: .refuse(status: 421, reason: "this is the Baton dashboard at 127.0.0.1:8123 or localhost:8123, not 127.0.0.1:80")),
        Row(name: "no token", method: "GET", target: "/", fields: [host],
            expected: .refuse(status: 401, reason: "open the address `baton dashboard` printed (it carries the token)")),
        Row(name: "a wrong token in the address", method: "GET", target: "/?token=\(String(repeating: "cd", count: 32))", fields: [host],
            expected: .refuse(status: 401, reason: "the token is not this dashboard's; open the address `baton dashboard` printed")),
        Row(name: "a wrong cookie", method: "GET", target: "/api/status", fields: [host, ("Cookie", "baton_dashboard=nope")],
            expected: .refuse(status: 401, reason: "open the address `baton dashboard` printed (it carries the token)")),
        Row(name: "the token in the address of the API is not accepted", method: "GET", target: "/api/status?token=\(token)", fields: [host],
            expected: .refuse(status: 401, reason: "the token is traded for a cookie at / only; open the address `baton dashboard` printed")),
        Row(name: "the token in the address with the cookie already set still cleans the address", method: "GET", target: "/?token=\(token)",
            fields: [host, ("Cookie", cookie)], expected: .exchange(location: "/")),
        Row(name: "an unknown path", method: "GET", target: "/etc/passwd", fields: [host, ("Cookie", cookie)],
            expected: .refuse(status: 404, reason: "no such page: /etc/passwd")),
        Row(name: "a run id that is not a number", method: "GET", target: "/api/runs/1x", fields: [host, ("Cookie", cookie)],
            expected: .refuse(status: 404, reason: "no such page: /api/runs/1x")),
        Row(name: "GET of a state change", method: "GET", target: "/api/trigger", fields: [host, ("Cookie", cookie)],
            expected: .refuse(status: 405, reason: "/api/trigger takes POST", allow: "POST")),
        Row(name: "POST of a read", method: "POST", target: "/api/status", fields: [host, ("Cookie", cookie)],
            expected: .refuse(status: 405, reason: "/api/status takes GET", allow: "GET, HEAD")),
        Row(name: "a trigger from the page", method: "POST", target: "/api/trigger", fields: [host, ("Cookie", cookie), ("Origin", origin)] + json,
            expected: .serve(.trigger)),
        Row(name: "a trigger from another site (CSRF)", method: "POST", target: "/api/trigger",
            fields: [host, ("Cookie", cookie), ("Origin", "http://evil.example")] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: http://evil.example)")),
        Row(name: "a trigger without Origin", method: "POST", target: "/api/cancel", fields: [host, ("Cookie", cookie)] + json,
            expected: .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: none)")),
        Row(name: "a form post", method: "POST", target: "/api/trigger",
            fields: [host, ("Cookie", cookie), ("Origin", origin), ("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "3")],
            expected: .refuse(status: 415, reason: "send JSON (Content-Type: application/json)")),
        Row(name: "a chunked body", method: "POST", target: "/api/trigger",
            fields: [host, ("Cookie", cookie), ("Origin", origin), ("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")],
            expected: .refuse(status: 411, reason: "send the body with a Content-Length")),
        Row(name: "a body too large", method: "POST", target: "/api/trigger",
            fields: [host, ("Cookie", cookie), ("Origin", origin), ("Content-Type", "application/json"), ("Content-Length", "16385")],
            expected: .refuse(status: 413, reason: "the body is larger than 16384 bytes")),
        Row(name: "the stream takes no HEAD", method: "HEAD", target: "/events", fields: [host, ("Cookie", cookie)],
            expected: .refuse(status: 405, reason: "/events takes GET", allow: "GET, HEAD")),
    ]

    @Test("each request is served, exchanged or refused as the table says", arguments: rows)
    func decide(_ row: Row) {
        #expect(Self.gate.decide(Self.head(row.method, row.target, row.fields)) == row.expected)
    }

    @Test("the cookie is HttpOnly, SameSite=Strict and for the whole site")
    func cookieField() {
        #expect(Self.gate.cookieField.value == "baton_dashboard=\(Self.token); Path=/; HttpOnly; SameSite=Strict")
    }

    @Test("an address other than loopback is its own only name")
    func otherAddress() {
        let gate = Gate(token: Self.token, address: ListenAddress(host: "10.0.0.5", port: 80))
        #expect(gate.hosts == ["10.0.0.5:80"])
        let v6 = Gate(token: Self.token, address: ListenAddress(host: "::1", port: 80))
        #expect(v6.hosts == ["[::1]:80", "localhost:80"])
    }
}
