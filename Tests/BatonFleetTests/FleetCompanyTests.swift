import BatonCore
@testable import BatonFleet
import Testing

@Suite("A host's company in the fleet: whether its commits notify")
struct FleetCompanyTests {
    @Test("a commit notifies unless the last renewal found no other host and no greeting came within a lease",
          arguments: [
              // (the renewal found others, seconds since a greeting, notifies)
              (nil, nil, true),
              (true, nil, true),
              (true, 30, true),
              (false, nil, false),
              (false, 0, true),
              (false, 14, true),
              (false, 15, false),
              (false, 30, false),
          ] as [(Bool?, Int?, Bool)])
    func notifies(renewal: Bool?, greetedAgo: Int?, notifies: Bool) {
        let now = ContinuousClock.now
        let heard = FleetCompany.Heard(atRenewal: renewal, greeted: greetedAgo.map { now - .seconds($0) })
        #expect(heard.notifies(at: now, lease: .seconds(15)) == notifies)
    }

    @Test("another host's greeting is heard as company and ticks; this host's own is not company")
    func greeting() {
        let own = FeedWake.hello("web-1/7/ab")
        #expect(own == "hello web-1/7/ab")
        let theirs = FeedWake([(channel: "baton", payload: FeedWake.hello("web-2/9/cd"))], lastTickAge: .zero, ownHello: own, catchUpDue: false)
        #expect(theirs == FeedWake(tick: true, outputRuns: [], greeted: true))
        let mine = FeedWake([(channel: "baton", payload: own)], lastTickAge: .zero, ownHello: own, catchUpDue: false)
        #expect(mine == FeedWake(tick: true, outputRuns: [], greeted: false))
        let output = FeedWake([(channel: FeedWake.outputChannel, payload: FeedWake.hello("web-2/9/cd"))], lastTickAge: .zero, ownHello: own, catchUpDue: false)
        #expect(!output.greeted)
        // A commit's news, tagged with its host's incarnation, is not a greeting.
        let news = FeedWake([(channel: "baton", payload: "web-2/9/cd")], lastTickAge: .zero, ownHello: own, catchUpDue: false)
        #expect(news == FeedWake(tick: true, outputRuns: [], greeted: false))
    }

    @Test("this host's own commits' NOTIFY asks its feed for no tick (each was handed over in-process); another's, an untagged one, a second's wait or an own commit left to a catch-up does")
    func ownNews() {
        let (me, hello) = ("web-1/7/ab", FeedWake.hello("web-1/7/ab"))
        func wake(_ payloads: [String], age: Duration = .zero, catchUpDue: Bool = false) -> Bool {
            FeedWake(payloads.map { (channel: "baton", payload: $0) }, lastTickAge: age, ownHello: hello, own: me, catchUpDue: catchUpDue).tick
        }
        #expect(!wake([me]))
        #expect(!wake([me, me]))
        #expect(wake([me], catchUpDue: true), "an own commit left to a catch-up (review-owncommit F1, N5): its own NOTIFY alone must not wait a second")
        #expect(wake([me, "web-2/9/cd"]))
        #expect(wake([""]), "an untagged NOTIFY (a cancel, an approval) is news")
        #expect(wake([me], age: .seconds(1)))
        #expect(wake([]), "woken with nothing read: the tick is the point")
        #expect(FeedWake([(channel: "baton", payload: me)], lastTickAge: .zero, ownHello: hello, catchUpDue: false).tick, "a feed that names no host ticks for any")
    }

    @Test("a commit's NOTIFY names its host's incarnation, quoted as SQL")
    func notifyStatement() {
        #expect(FleetCompany.notify("web-1/7/ab") == "NOTIFY baton, 'web-1/7/ab'")
        #expect(FleetCompany(FleetHost(name: "web-1", incarnation: "web-1/7/ab", lease: .seconds(15))).notice == "NOTIFY baton, 'web-1/7/ab'")
        #expect(FleetCompany.notify("o'brien/1/x") == "NOTIFY baton, 'o''brien/1/x'")
    }

    @Test("a commit asks for its feed only once one follows, from the feed's mark; its results are handed over, nothing for a commit that wrote nothing, a catch-up where there is no mark or they cannot be read")
    func handsOwnFeed() throws {
        let company = FleetCompany(FleetHost(name: "web-1", incarnation: "web-1/7/ab", lease: .seconds(15)))
        #expect(company.notifies, "nothing heard yet: company assumed")
        company.renewed(others: false)
        #expect(!company.notifies)
        let handed = Locked<[OwnCommit]>([]), poked = Locked(0), caught = Locked(0)
        #expect(company.ask(at: .now) == nil, "no feed follows")
        company.follow(hand: { commit in handed.withLock { $0.append(commit) } }, poke: { poked.withLock { $0 += 1 } },
                       catchUp: { caught.withLock { $0 += 1 } })
        // No mark yet: nothing asked, and the commit is caught up.
        let unmarked = try #require(company.ask(at: .now))
        #expect(unmarked.statements.isEmpty)
        company.committed(unmarked, [PGRows]())
        #expect(caught.withLock { $0 } == 1)
        company.publish(FeedAhead.Mark(since: 12, inProgress: [10]))
        let ask = try #require(company.ask(at: .now))
        #expect(ask.statements.count == 4 && ask.statements[0].sql == OwnCommit.indexesOnly)
        #expect(ask.statements[2].parameters == ["12", String(12 + (1 << 40)), "{10}"])
        let run = Array(repeating: String?.none, count: CatchUpColumns.select.count)
        let set = PGRows(rows: [])
        company.committed(ask, [set, PGRows(rows: [["13", "10:14:10", "read committed"]]), PGRows(rows: [["11,12"]]), PGRows(rows: [run])])
        #expect(handed.withLock { $0.map(\.xid) } == [13])
        #expect(handed.withLock { $0.first?.writers } == [11, 12])
        #expect(handed.withLock { $0.first?.mark } == FeedAhead.Mark(since: 12, inProgress: [10]))
        // A transaction that wrote nothing has no id: nothing to hand, nothing to catch up.
        company.committed(ask, [set, PGRows(rows: [[nil, "10:14:10", "read committed"]]), PGRows(rows: [[""]]), PGRows(rows: [])])
        // Results that cannot be read, and a snapshot taken before the key's row was waited for
        // (REPEATABLE READ): the feed catches up.
        company.committed(ask, [set, PGRows(rows: [["13", "nonsense", "read committed"]]), PGRows(rows: [[""]]), PGRows(rows: [])])
        company.committed(ask, [set, PGRows(rows: [["14", "10:15:10", "repeatable read"]]), PGRows(rows: [[""]]), PGRows(rows: [run])])
        company.committed(ask, [PGRows]())
        #expect(handed.withLock { $0.count } == 1)
        #expect(caught.withLock { $0 } == 4 && poked.withLock { $0 } == 0)
        company.greeted()
        #expect(company.notifies)
        company.renewed(others: true)
        #expect(company.notifies)
    }
}
