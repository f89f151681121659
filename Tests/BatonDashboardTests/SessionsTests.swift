import BatonDashboard
import Testing

/// The sign-in rules, as tables over a clock the test moves: a code is good once, within its
/// life; a code that comes twice signs out what it signed in; sessions are bounded.
@Suite("Dashboard sessions")
struct SessionsTests {
    static let start = ContinuousClock.now

    enum Step: Sendable, CustomStringConvertible {
        case issue(String, at: Int)
        case redeem(String, token: String, at: Int, expect: Sessions.Redemption)
        case admits(String, Bool)

        var description: String {
            switch self {
            case let .issue(code, at): "issue \(code) at \(at)s"
            case let .redeem(code, token, at, expect): "redeem \(code) for \(token) at \(at)s → \(expect)"
            case let .admits(token, yes): "\(token) \(yes ? "admitted" : "refused")"
            }
        }
    }

    struct Story: CustomTestStringConvertible, Sendable {
        var name: String
        var steps: [Step]
        var testDescription: String { name }
    }

    static let stories: [Story] = [
        Story(name: "a code is traded once for its session", steps: [
            .issue("a", at: 0), .admits("s1", false),
            .redeem("a", token: "s1", at: 5, expect: .session("s1")), .admits("s1", true),
        ]),
        Story(name: "a code past its 60 s is worthless", steps: [
            .issue("a", at: 0), .redeem("a", token: "s1", at: 60, expect: .expired), .admits("s1", false),
            .redeem("a", token: "s2", at: 61, expect: .unknown),
        ]),
        Story(name: "just inside its life it works", steps: [
            .issue("a", at: 0), .redeem("a", token: "s1", at: 59, expect: .session("s1")),
        ]),
        Story(name: "a code used twice signs out the page it signed in (whoever came first)", steps: [
            .issue("a", at: 0), .redeem("a", token: "thief", at: 1, expect: .session("thief")),
            .redeem("a", token: "owner", at: 2, expect: .reused(revoked: "thief")),
            .admits("thief", false), .admits("owner", false),
            .redeem("a", token: "third", at: 3, expect: .unknown),
        ]),
        Story(name: "after its life a used code is forgotten, and its session stays", steps: [
            .issue("a", at: 0), .redeem("a", token: "s1", at: 1, expect: .session("s1")),
            .issue("b", at: 70), .redeem("a", token: "s2", at: 71, expect: .unknown), .admits("s1", true),
        ]),
        Story(name: "an unknown code, or a near miss, gets nothing", steps: [
            .issue("abcd", at: 0), .redeem("abce", token: "s1", at: 1, expect: .unknown),
            .redeem("abc", token: "s1", at: 1, expect: .unknown), .redeem("", token: "s1", at: 1, expect: .unknown),
            .admits("s1", false), .redeem("abcd", token: "s2", at: 2, expect: .session("s2")),
        ]),
        Story(name: "codes are each their own", steps: [
            .issue("a", at: 0), .issue("b", at: 30),
            .redeem("b", token: "s2", at: 31, expect: .session("s2")),
            .redeem("a", token: "s1", at: 61, expect: .expired),
            .admits("s2", true),
        ]),
        Story(name: "no session is admitted before any code is used", steps: [.admits("", false), .admits("x", false)]),
    ]

    @Test("each story holds step by step", arguments: stories)
    func story(_ story: Story) {
        var sessions = Sessions()
        for step in story.steps {
            switch step {
            case let .issue(code, at):
                sessions.issue(code: code, now: Self.start + .seconds(at))
            case let .redeem(code, token, at, expected):
                #expect(sessions.redeem(code: code, token: token, now: Self.start + .seconds(at)) == expected, "\(step)")
            case let .admits(token, yes):
                #expect(sessions.admits(token) == yes, "\(step)")
            }
        }
    }

    @Test("at most 16 unused codes wait (the oldest goes) and 64 sessions live (the oldest is signed out)")
    func bounds() {
        var sessions = Sessions()
        for n in 0...Sessions.maxCodes { sessions.issue(code: "c\(n)", now: Self.start) }
        #expect(sessions.redeem(code: "c0", token: "s", now: Self.start) == .unknown)
        #expect(sessions.redeem(code: "c1", token: "s1", now: Self.start) == .session("s1"))
        var more = Sessions()
        for n in 0...Sessions.maxSessions {
            more.issue(code: "k\(n)", now: Self.start)
            #expect(more.redeem(code: "k\(n)", token: "t\(n)", now: Self.start) == .session("t\(n)"))
        }
        #expect(!more.admits("t0"))
        #expect(more.admits("t1") && more.admits("t\(Sessions.maxSessions)"))
    }
}
