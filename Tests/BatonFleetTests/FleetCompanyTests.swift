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
        let theirs = FeedWake([(channel: "baton", payload: FeedWake.hello("web-2/9/cd"))], lastTickAge: .zero, ownHello: own)
        #expect(theirs == FeedWake(tick: true, outputRuns: [], greeted: true))
        let mine = FeedWake([(channel: "baton", payload: own)], lastTickAge: .zero, ownHello: own)
        #expect(mine == FeedWake(tick: true, outputRuns: [], greeted: false))
        let output = FeedWake([(channel: FeedWake.outputChannel, payload: FeedWake.hello("web-2/9/cd"))], lastTickAge: .zero, ownHello: own)
        #expect(!output.greeted)
        // A commit's news, tagged with its host's incarnation, is not a greeting.
        let news = FeedWake([(channel: "baton", payload: "web-2/9/cd")], lastTickAge: .zero, ownHello: own)
        #expect(news == FeedWake(tick: true, outputRuns: [], greeted: false))
    }

    @Test("a commit's NOTIFY names its host's incarnation, quoted as SQL")
    func notifyStatement() {
        #expect(FleetCompany.notify("web-1/7/ab") == "NOTIFY baton, 'web-1/7/ab'")
        #expect(FleetCompany(FleetHost(name: "web-1", incarnation: "web-1/7/ab", lease: .seconds(15))).notice == "NOTIFY baton, 'web-1/7/ab'")
        #expect(FleetCompany.notify("o'brien/1/x") == "NOTIFY baton, 'o''brien/1/x'")
    }

    @Test("told of a commit that notified nobody, the host's own feed is asked for a tick; a renewal and a greeting change the answer")
    func tellsOwnFeed() {
        let company = FleetCompany(FleetHost(name: "web-1", incarnation: "web-1/7/ab", lease: .seconds(15)))
        #expect(company.notifies, "nothing heard yet: company assumed")
        company.renewed(others: false)
        #expect(!company.notifies)
        let told = Locked(0)
        company.tellOwnFeed()
        company.follow { told.withLock { $0 += 1 } }
        company.tellOwnFeed()
        #expect(told.withLock { $0 } == 1)
        company.greeted()
        #expect(company.notifies)
        company.renewed(others: true)
        #expect(company.notifies)
    }
}
