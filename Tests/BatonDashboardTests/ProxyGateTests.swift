import BatonDashboard
@testable import BatonIPC
import Testing

/// Issue 42, item 5: the team's dashboard believes the user header only from its trusted proxies,
/// validates the name, and refuses the header from anyone else.
@Suite("Dashboard proxy gate")
struct ProxyGateTests {
    /// nginx on this machine runs as uid 33; a proxy at 10.1.0.0/16 is on another host.
    static let proxy = ProxyGate(trusted: [AddressRange("10.1.0.0/16")!, AddressRange("::1")!], userHeader: "X-Forwarded-User", proxyUsers: [33])

    static func head(_ fields: [(String, String)]) -> HTTPRequestHead { GateTests.head("GET", "/api/status", [("Host", "dash.example.org")] + fields) }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var peer: String?
        /// The owner of the peer's socket where it is on this machine (nil: another host).
        var uid: UInt32? = nil
        var fields: [(String, String)]
        var expected: ProxyGate.Decision
        var testDescription: String { name }
    }

    @Test("who a request is from", arguments: [
        Row(name: "a trusted proxy names alice", peer: "10.1.2.3", fields: [("X-Forwarded-User", "alice")], expected: .user("alice")),
        Row(name: "an IPv6 proxy on this machine, as its user; the field's name in any case", peer: "::1", uid: 33,
            fields: [("x-forwarded-user", "bob")], expected: .user("bob")),
        Row(name: "any other local user at the proxy's address (curl --interface) is not believed", peer: "::1", uid: 1000,
            fields: [("X-Forwarded-User", "root")],
            expected: .refuse(status: 403, reason: "a proxy on this machine is believed only as the user it runs as (--proxy-user): uid 1000 is not it")),
        Row(name: "nor root", peer: "::1", uid: 0, fields: [("X-Forwarded-User", "alice")],
            expected: .refuse(status: 403, reason: "a proxy on this machine is believed only as the user it runs as (--proxy-user): uid 0 is not it")),
        Row(name: "an IPv4-mapped peer in the block", peer: "::ffff:10.1.9.9", fields: [("X-Forwarded-User", "bob")], expected: .user("bob")),
        Row(name: "a client beside the proxy forges the field", peer: "10.2.0.1", fields: [("X-Forwarded-User", "root")],
            expected: .refuse(status: 403, reason: "x-forwarded-user is believed only from the dashboard's trusted proxies, not from 10.2.0.1")),
        Row(name: "loopback is not trusted unless listed", peer: "127.0.0.1", fields: [("X-Forwarded-User", "alice")],
            expected: .refuse(status: 403, reason: "x-forwarded-user is believed only from the dashboard's trusted proxies, not from 127.0.0.1")),
        Row(name: "anyone else, without the field", peer: "192.0.2.1", fields: [],
            expected: .refuse(status: 403, reason: "this dashboard is served through its sign-in proxy only; 192.0.2.1 is not one")),
        Row(name: "the proxy names no one", peer: "10.1.0.1", fields: [], expected: .refuse(status: 401, reason: "the proxy named no user (x-forwarded-user)")),
        Row(name: "the proxy names two", peer: "10.1.0.1", fields: [("X-Forwarded-User", "alice"), ("X-Forwarded-User", "bob")],
            expected: .refuse(status: 400, reason: "more than one x-forwarded-user field")),
        Row(name: "an email is no local user", peer: "10.1.0.1", fields: [("X-Forwarded-User", "alice@example.org")],
            expected: .refuse(status: 403, reason: "x-forwarded-user: \"alice@example.org\" is no user name of this machine's shape (map it to an account or group with --user-map)")),
        Row(name: "a uid is no name", peer: "10.1.0.1", fields: [("X-Forwarded-User", "0")],
            expected: .refuse(status: 403, reason: "x-forwarded-user: \"0\" is no user name of this machine's shape (map it to an account or group with --user-map)")),
    ])
    func decisions(_ row: Row) {
        #expect(Self.proxy.decide(Self.head(row.fields), peer: row.peer, peerUID: row.uid) == row.expected)
    }

    static let map = try! UserMap.parse("alice@example.org alice\n*@example.org group:staff\n", source: "/etc/baton/users.map")

    @Test("with a user map: a mapped name becomes its account or a group principal; an unmapped account name is as before; any other name is refused naming the map", arguments: [
        ("alice@example.org", ProxyGate.Decision.user("alice")),
        ("carol@example.org", .user("group:staff:carol@example.org")),
        ("bob", .user("bob")),
        ("mallory@evil.test", .refuse(status: 403, reason: "x-forwarded-user: \"mallory@evil.test\" is no user name of this machine's shape (no rule of /etc/baton/users.map maps it)")),
    ] as [(String, ProxyGate.Decision)])
    func mapped(_ name: String, _ expected: ProxyGate.Decision) {
        #expect(Self.proxy.decide(Self.head([("X-Forwarded-User", name)]), peer: "10.1.0.1", peerUID: nil, map: Self.map) == expected)
    }

    @Test("review item 1: a name not of printable ASCII (the Kelvin sign folds to k in Unicode), two joined by a comma, one too long or empty is refused before the map is read", arguments: [
        "\u{212A}arl@example.org", "carol@example.org,karl@example.org", String(repeating: "a", count: 190) + "@example.org", "", "karl @example.org",
    ])
    func strangeNames(_ name: String) {
        let map = try! UserMap.parse("karl@example.org karl\n*@example.org group:staff\n*,* group:staff\n* group:staff\n", source: "m")
        guard case let .refuse(status, reason) = Self.proxy.decide(Self.head([("X-Forwarded-User", name)]), peer: "10.1.0.1", peerUID: nil, map: map) else {
            Issue.record("\(name) was served"); return
        }
        #expect(status == 403)
        #expect(reason.contains("is not one name of 1 to 128 bytes of printable ASCII without spaces or commas"), "\(reason)")
    }

    @Test("review items 1, 2: the map matches without regard to ASCII case only; a group principal is named in lower case, whatever case the proxy used")
    func asciiCase() {
        let map = try! UserMap.parse("karl@example.org karl\n*@example.org group:staff\n", source: "m")
        #expect(Self.proxy.decide(Self.head([("X-Forwarded-User", "KARL@example.org")]), peer: "10.1.0.1", peerUID: nil, map: map) == .user("karl"))
        #expect(Self.proxy.decide(Self.head([("X-Forwarded-User", "Carol@Example.ORG")]), peer: "10.1.0.1", peerUID: nil, map: map)
            == .user("group:staff:carol@example.org"))
        #expect(map.target(for: "\u{212A}arl@example.org") == .group("staff"), "the Kelvin sign is no k: not karl's")
    }

    static let groupMap = try! UserMap.parse("alice@example.org alice\ngroup:staff group:staff\nGroup:*-admins group:wheel\n", source: "/etc/baton/users.map")

    @Test("X-Forwarded-Groups from the trusted proxy: a group: rule maps a person no name rule maps; a name rule wins; none: refused as before", arguments: [
        ([("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Groups", "dev, Staff")], ProxyGate.Decision.user("group:staff:carol@example.org")),
        ([("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Groups", " web-admins ")], .user("group:wheel:carol@example.org")),
        // Two fields: refused, as two user fields are (the second may be a client's the proxy passed through).
        ([("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Groups", "dev"), ("x-forwarded-groups", " web-admins ")],
         .refuse(status: 400, reason: "more than one x-forwarded-groups field")),
        ([("X-Forwarded-User", "alice@example.org"), ("X-Forwarded-Groups", "staff")], .user("alice")),
        ([("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Groups", "st aff,,staff x")],
         .refuse(status: 403, reason: "x-forwarded-user: \"carol@example.org\" is no user name of this machine's shape (no rule of /etc/baton/users.map maps it)")),
        ([("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Team", "staff")],
         .refuse(status: 403, reason: "x-forwarded-user: \"carol@example.org\" is no user name of this machine's shape (no rule of /etc/baton/users.map maps it)")),
    ] as [([(String, String)], ProxyGate.Decision)])
    func groups(_ fields: [(String, String)], _ expected: ProxyGate.Decision) {
        #expect(Self.proxy.decide(Self.head(fields), peer: "10.1.0.1", peerUID: nil, map: Self.groupMap) == expected)
    }

    @Test("--groups-header names another field; the groups are believed only from a trusted proxy (a forged field is refused first)")
    func groupsHeader() {
        let team = ProxyGate(trusted: [AddressRange("10.1.0.0/16")!], groupsHeader: "X-Forwarded-Team")
        let fields = [("X-Forwarded-User", "carol@example.org"), ("X-Forwarded-Team", "staff")]
        #expect(team.decide(Self.head(fields), peer: "10.1.0.1", peerUID: nil, map: Self.groupMap) == .user("group:staff:carol@example.org"))
        #expect(team.decide(Self.head([("X-Forwarded-Groups", "staff")] + Array(fields.prefix(1))), peer: "10.1.0.1", peerUID: nil, map: Self.groupMap)
            == .refuse(status: 403, reason: "x-forwarded-user: \"carol@example.org\" is no user name of this machine's shape (no rule of /etc/baton/users.map maps it)"))
        #expect(team.decide(Self.head(fields), peer: "10.2.0.1", peerUID: nil, map: Self.groupMap)
            == .refuse(status: 403, reason: "x-forwarded-user is believed only from the dashboard's trusted proxies, not from 10.2.0.1"))
        #expect(ProxyGate.groups(["a, B ,,c d", "e"]) == [Array("a".utf8), Array("b".utf8), Array("e".utf8)])
        #expect(ProxyGate.groups([Array(repeating: "g", count: 300).joined(separator: ",")]).count == ProxyGate.maxGroups)
    }

    @Test("the map never makes a forged field believed: an untrusted peer is refused before the map is read")
    func mapAfterTrust() {
        let decision = Self.proxy.decide(Self.head([("X-Forwarded-User", "alice@example.org")]), peer: "10.2.0.1", peerUID: nil, map: Self.map)
        #expect(decision == .refuse(status: 403, reason: "x-forwarded-user is believed only from the dashboard's trusted proxies, not from 10.2.0.1"))
    }

    @Test("without a proxy: this machine's peers only, and the user field from no one")
    func unproxied() {
        let machine: Set<String> = ["10.0.0.9", "2001:db8::9"]
        let plain = Self.head([])
        for peer in ["127.0.0.1", "127.0.0.53", "::1", "::ffff:127.0.0.1", "10.0.0.9", "::ffff:10.0.0.9", "2001:db8::9"] {
            #expect(ProxyGate.unproxied(plain, peer: peer, machine: machine) == nil, "\(peer)")
        }
        for peer in ["10.0.0.8", "192.0.2.1", "2001:db8::8", "::ffff:192.0.2.1"] as [String?] + [nil] {
            guard case .refuse(403, let reason)? = ProxyGate.unproxied(plain, peer: peer, machine: machine) else {
                Issue.record("\(peer ?? "nil") was served")
                continue
            }
            #expect(reason.hasPrefix("this dashboard serves this machine only"))
        }
        #expect(ProxyGate.unproxied(Self.head([("X-Forwarded-User", "alice")]), peer: "127.0.0.1", machine: machine)
            == .refuse(status: 403, reason: "x-forwarded-user is believed only behind a trusted proxy (baton dashboard --trusted-proxy)"))
    }

    @Test("address blocks: parsed, with host bits refused, and matched by prefix")
    func ranges() throws {
        for bad in ["10.0.0.1/8", "10.0.0.0/33", "example.org", "10.0.0.0/", "10.0.0.0/x", "::1/129", ""] { #expect(AddressRange(bad) == nil, "\(bad)") }
        let block = try #require(AddressRange("192.168.0.0/23"))
        #expect(block.contains("192.168.1.255") && block.contains("192.168.0.0"))
        #expect(!block.contains("192.168.2.0") && !block.contains("::1") && !block.contains("nonsense"))
        let v6 = try #require(AddressRange("fd00::/8"))
        #expect(v6.contains("fd12::7") && !v6.contains("fe80::1") && !v6.contains("10.0.0.1"))
        #expect(try #require(AddressRange("0.0.0.0/0")).contains("203.0.113.9"))
    }

    @Test("behind a proxy the gate needs no session, answers to the proxy's Host, and takes its https Origin")
    func proxiedGate() {
        let gate = Gate(address: ListenAddress(host: "127.0.0.1", port: 8123))
        let status = Self.head([])
        #expect(gate.decide(status, sessions: Sessions(), proxied: true) == .serve(.status))
        #expect(gate.decide(status, sessions: Sessions()) != .serve(.status), "without the proxy, a foreign Host and no session are refused")
        let post = { (origin: String) in
            GateTests.head("POST", "/api/trigger", [("Host", "dash.example.org"), ("Origin", origin), ("Content-Type", "application/json"), ("Content-Length", "20")])
        }
        #expect(gate.decide(post("https://dash.example.org"), sessions: Sessions(), proxied: true) == .serve(.trigger))
        #expect(gate.decide(post("https://evil.example"), sessions: Sessions(), proxied: true)
            == .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: https://evil.example)"))
    }
}
