import BatonCore
@testable import BatonDashboard
@testable import BatonIPC
import Testing

/// Issue 42, item 5: the team's user map turns a proxy's names (e-mail addresses) into accounts or
/// group principals; first match wins, a bad line is refused with its number.
@Suite("Dashboard user map")
struct UserMapTests {
    static let text = """
        # who is who behind the proxy
        alice@example.org     alice          # has an account
        bob@Example.org\tbob
        *@ops.example.org     group:ops
        *@example.org         group:staff

        """

    @Test("parses rules, comments and blank lines; each rule keeps its line")
    func parses() throws {
        let map = try UserMap.parse(Self.text, source: "/etc/baton/users.map")
        #expect(map.rules.map(\.line) == [2, 3, 4, 5])
        #expect(map.rules.map(\.target) == [.account("alice"), .account("bob"), .group("ops"), .group("staff")])
        #expect(map.source == "/etc/baton/users.map")
    }

    @Test("the first rule that matches wins, without regard to case; no match: nil", arguments: [
        ("alice@example.org", UserMap.Target.account("alice")),
        ("ALICE@example.ORG", .account("alice")),
        ("bob@example.org", .account("bob")),
        ("carol@ops.example.org", .group("ops")),
        ("carol@example.org", .group("staff")),
        ("@example.org", .group("staff")),
    ] as [(String, UserMap.Target)])
    func firstMatch(_ name: String, _ expected: UserMap.Target) throws {
        #expect(try UserMap.parse(Self.text, source: "m").target(for: name) == expected)
    }

    @Test("group: rules match the proxy's groups, only where no name rule matched; the first such rule one group matches wins")
    func groupRules() throws {
        let map = try UserMap.parse("""
            alice@example.org  alice
            GROUP:admins       group:wheel   # `group:` in any case
            group:team-*       group:staff
            group:ops          group:ops
            """, source: "m")
        #expect(map.hasGroupRules)
        #expect(map.rules.map(\.group) == [false, true, true, true])
        #expect(map.rules.map(\.pattern) == ["alice@example.org", "admins", "team-*", "ops"])
        let lowered = { (name: String) in UserMap.asciiLowered(name) }
        #expect(map.target(lowered: lowered("alice@example.org"), groups: [lowered("admins")]) == .account("alice"), "a name rule first")
        #expect(map.target(for: "group:admins") == nil, "GROUP:admins is no name rule")
        #expect(map.target(lowered: lowered("carol@example.org"), groups: [lowered("ops"), lowered("team-web")]) == .group("staff"))
        #expect(map.target(lowered: lowered("carol@example.org"), groups: [lowered("ops")]) == .group("ops"))
        #expect(map.target(lowered: lowered("dave@example.org"), groups: [lowered("admins")]) == .group("wheel"))
        #expect(map.target(lowered: lowered("dave@example.org"), groups: []) == nil)
        // A group rule never matches a name: `admins` as the proxy's user is no member of admins.
        #expect(map.target(for: "admins") == nil)
        #expect(try !UserMap.parse(Self.text, source: "m").hasGroupRules)
    }

    @Test("names no rule matches")
    func unmatched() throws {
        let map = try UserMap.parse(Self.text, source: "m")
        for name in ["alice", "carol@example.org.evil.test", "carol@example.com", "example.org", ""] {
            #expect(map.target(for: name) == nil, "\(name)")
        }
    }

    @Test("glob: `*` is any run, also empty, and only `*` is special", arguments: [
        ("*", "", true), ("*", "anything", true), ("a*c", "abbbc", true), ("a*c", "ac", true), ("a*c", "acb", false),
        ("*a*a*", "banana", true), ("*x*", "banana", false), ("a.c", "abc", false), ("a?c", "abc", false), ("**", "x", true),
    ])
    func glob(_ pattern: String, _ name: String, _ matches: Bool) {
        #expect(UserMap.matches(Array(pattern.utf8), Array(name.utf8)) == matches)
    }

    @Test("a bad line is refused with its number", arguments: [
        ("alice@example.org\n", 1, "expected a pattern and a target"),
        ("# ok\nalice@example.org alice extra\n", 2, "got 3 words"),
        ("a alice\n\n*@x group:\n", 3, "group: names no group"),
        ("a alice\n*@x group:st aff\n", 2, "got 3 words"),
        ("a 0\n", 1, "\"0\" is no account name"),
        ("a al/ice\n", 1, "is no account name"),
        ("é alice\n", 1, "printable ASCII"),
        // A group rule whose target is an account: the history would name the account, not the person.
        ("a alice\ngroup:admins root\n", 2, "a group: rule's target is group:NAME, not an account"),
        ("Group:admins root\n", 1, "a group: rule's target is group:NAME, not an account"),
    ] as [(String, Int, String)])
    func badLines(_ text: String, _ line: Int, _ said: String) {
        #expect {
            try UserMap.parse(text, source: "users.map")
        } throws: { error in
            guard let error = error as? UserMap.ParseError else { return false }
            return error.line == line && error.description.hasPrefix("users.map:\(line): ") && error.message.contains(said)
        }
    }

    @Test("a name is sanitized for the history: printable ASCII, bounded")
    func sanitized() {
        #expect(UserMap.sanitized("zoë@example.org") == "zo??@example.org")
        #expect(UserMap.sanitized("a b\u{7}c") == "a?b?c")
        #expect(UserMap.sanitized(String(repeating: "x", count: 500)).utf8.count == Request.maxPrincipalLength)
    }

    @Test("a group principal's requests ask batond `as` the person and `asGroup` the group; an account's `as` it alone")
    func acting() {
        let principal = Request(op: .status).acting(UserMap.principal("carol@example.org", group: "staff"))
        #expect(principal.actingAs == "carol@example.org" && principal.asGroup == "staff")
        let account = Request(op: .status, asGroup: "stale").acting("alice")
        #expect(account.actingAs == "alice" && account.asGroup == nil)
        #expect(Request(op: .status).acting(nil).actingAs == nil)
        #expect((try? principal.validated()) != nil)
    }
}
