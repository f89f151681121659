import BatonCore
@testable import BatonService
import Testing

/// Issue 42, item 5: the team's dashboard asks batond `as` the user a trusted proxy named. batond
/// honours `as` only from root or its own user, and then decides every check as for that account.
@Suite("Service: requests made as another user")
struct ActingAsTests {
    @Test("an ordinary peer's `as` is refused, whoever it names (itself included), and changes nothing")
    func ordinaryPeerRefused() async throws {
        let fixture = Fixture()
        let alice = Recorder(uid: Fixture.alice)
        for name in ["bob", "alice", "root"] {
            let answer = try #require(await fixture.ask(#"{"id":1,"op":"trigger","action":"deploy","params":{"env":"staging"},"detach":true,"as":"\#(name)"}"#, as: alice))
            #expect(answer.error?.code == .forbidden)
            #expect(answer.error?.message.contains("only root and batond's own user") == true)
        }
        // Without `as`, alice may trigger deploy: the refusal above was the field's.
        let own = try #require(await fixture.ask(#"{"id":2,"op":"trigger","action":"deploy","params":{"env":"staging"},"detach":true}"#, as: alice))
        #expect(own.ok == true)
    }

    @Test("root asking as bob has bob's rights: refused the trigger bob may not do, and the refusal names bob")
    func actingWithTheNamedUsersRights() async throws {
        let fixture = Fixture()
        let root = Recorder(uid: 0)
        let answer = try #require(await fixture.ask(#"{"id":1,"op":"trigger","action":"deploy","params":{"env":"staging"},"detach":true,"as":"bob"}"#, as: root))
        #expect(answer.error?.code == .forbidden)
        #expect(answer.error?.message.contains("uid \(Fixture.bob) (bob)") == true)
        // Bob cannot read `secret`; root asking as himself lists it.
        let bobs = try #require(await fixture.ask(#"{"id":2,"op":"status","as":"bob"}"#, as: root))
        #expect(bobs.actions?.map(\.name).contains("secret") == false)
        #expect(bobs.actions?.map(\.name).contains("deploy") == true)
        let roots = try #require(await fixture.ask(#"{"id":3,"op":"status"}"#, as: root))
        #expect(roots.actions?.map(\.name).contains("secret") == true)
    }

    @Test("root asking as alice triggers as alice: the run's trigger carries alice's uid")
    func triggeredAsTheNamedUser() async throws {
        let fixture = Fixture()
        let root = Recorder(uid: 0)
        let answer = try #require(await fixture.ask(#"{"id":1,"op":"trigger","action":"deploy","params":{"env":"prod"},"detach":true,"as":"alice"}"#, as: root))
        #expect(answer.ok == true)
        #expect(answer.run?.trigger?.uid == Fixture.alice)
    }

    @Test("a name with no account gets nothing, never the asker's rights; a name of the wrong shape is a bad request")
    func unknownAndMalformedNames() async throws {
        let fixture = Fixture()
        let root = Recorder(uid: 0)
        let unknown = try #require(await fixture.ask(#"{"id":1,"op":"status","as":"mallory"}"#, as: root))
        #expect(unknown.error?.code == .forbidden)
        #expect(unknown.error?.message.contains("no user mallory") == true)
        #expect(unknown.actions == nil)
        for bad in ["1000", "", "a b", "../x", "alice:x", String(repeating: "a", count: 33)] {
            let answer = try #require(await fixture.ask(#"{"id":2,"op":"status","as":"\#(bad)"}"#, as: root))
            #expect(answer.error?.code == .badRequest, "\(bad)")
        }
    }

    @Test("user names: the shape `as` and the dashboard's header take")
    func userNames() {
        for good in ["alice", "_svc", "a.b-c_d", "host$", "A1"] { #expect(Request.isUserName(good), "\(good)") }
        for bad in ["", "1abc", "-x", "a$b", "a/b", "a b", "ä", String(repeating: "x", count: 33)] { #expect(!Request.isUserName(bad), "\(bad)") }
    }
}

/// `as` names people: never root nor batond's own user, whose rights are everything; and a name
/// the machine has no user for is remembered, so that one stranger does not hold the lookup thread.
@Suite("Service: `as` refuses the daemon's accounts and remembers strangers")
struct ActingAsRefusalTests {
    @Test("root asking as root, or as batond's own user, is refused (forbidden) and nothing is done")
    func daemonAccountsRefused() async throws {
        let fixture = Fixture(accounts: { name in
            switch name {
            case "root": ActingUser(name: "root", uid: 0, gid: 0, groups: [0])
            default: Fixture.accounts(name)
            }
        })
        let root = Recorder(uid: 0)
        let answer = try #require(await fixture.ask(#"{"id":1,"op":"trigger","action":"deploy","params":{"env":"staging"},"detach":true,"as":"root"}"#, as: root))
        #expect(answer.error?.code == .forbidden && answer.error?.message.contains("root or batond's own user") == true, "\(String(describing: answer.error))")
        #expect(fixture.conductor.inFlight().isEmpty)
    }

    @Test("a name with no user is looked up once within the cache's time, and refused both times")
    func strangersRemembered() async throws {
        let lookups = Locked(0)
        let fixture = Fixture(accounts: { name in
            lookups.withLock { $0 += 1 }
            return Fixture.accounts(name)
        }, kept: .seconds(3_600))
        let root = Recorder(uid: 0)
        for id in 1...2 {
            let answer = try #require(await fixture.ask(#"{"id":\#(id),"op":"status","as":"mallory"}"#, as: root))
            #expect(answer.error?.code == .forbidden && answer.error?.message.contains("no user mallory") == true)
        }
        #expect(lookups.withLock { $0 } == 1)
    }
}

/// The named accounts are kept as peers' groups are: a team's dashboard asks as the same users
/// over and over, and its requests (one connection) must not each wait for the lookup thread.
@Suite("Service: accounts named by `as` are cached")
struct ActingAsCacheTests {
    @Test("a second request as alice within the cache's time is served without asking the user database again")
    func cached() async throws {
        let lookups = Locked(0)
        // Kept an hour: the two requests may be seconds apart on a loaded machine (a 10 s cache expired once between them).
        let fixture = Fixture(accounts: { name in
            lookups.withLock { $0 += 1 }
            return Fixture.accounts(name)
        }, kept: .seconds(3_600))
        let root = Recorder(uid: 0)
        #expect(try #require(await fixture.ask(#"{"id":1,"op":"status","as":"alice"}"#, as: root)).ok == true)
        #expect(lookups.withLock { $0 } == 1)
        let again = try #require(await fixture.ask(#"{"id":2,"op":"status","as":"alice"}"#, as: root))
        #expect(again.ok == true && again.id == .number(2))
        #expect(lookups.withLock { $0 } == 1, "looked up again")
    }
}
