import BatonCore
import Dispatch
@testable import BatonService
import Testing

/// Issue 38: a peer's groups come from the user database (NSS may block), never on the loop: a
/// request whose peer's groups are not cached waits for the lookup thread, and the loop answers
/// others meanwhile; once cached, the next request is served at once.
@Suite("Service: group lookups off the loop")
struct GroupLookupTests {
    @Test("a request of a peer whose groups are not cached is served after the lookup thread comes back; the loop goes on meanwhile")
    func lookupOffTheLoop() async throws {
        // Kept an hour: a loaded machine can take more than the 10 s between two steps.
        let fixture = Fixture(kept: .seconds(3_600))
        let held = DispatchSemaphore(value: 0)
        defer { held.signal(); held.signal() }
        // The lookup thread runs one job at a time: this one holds it.
        fixture.service.lookups.submit { held.wait() }
        let alice = Recorder(uid: Fixture.alice)
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"ping"}"#.utf8)), from: alice)
        // Root needs no groups: served while alice's request waits for the lookup.
        let root = try #require(await fixture.ask(#"{"id":2,"op":"ping"}"#, as: Recorder(uid: 0)))
        #expect(root.ok == true)
        #expect(alice.sentCount == 0, "served before its peer's groups were looked up")
        #expect(fixture.service.groupCache.withLock { $0[Fixture.alice] } == nil)
        held.signal()
        let answer = try #require(await alice.answer())
        #expect(answer.ok == true && answer.id == .number(1))
        #expect(fixture.service.groupCache.withLock { $0[Fixture.alice] } != nil)
        // Cached now: served on the loop, the lookup thread held again.
        fixture.service.lookups.submit { held.wait() }
        let again = try #require(await fixture.ask(#"{"id":3,"op":"ping"}"#, as: alice))
        #expect(again.ok == true && again.id == .number(3))
        held.signal()
    }

    @Test("requests of one connection waiting for a lookup are served in the order they came")
    func order() async throws {
        // Kept an hour: a loaded machine can take more than the 10 s between two steps.
        let fixture = Fixture(kept: .seconds(3_600))
        let held = DispatchSemaphore(value: 0)
        defer { held.signal(); held.signal() }
        fixture.service.lookups.submit { held.wait() }
        let bob = Recorder(uid: Fixture.bob)
        for id in 1...3 { fixture.service.receivedOnLoop(.line(Array(#"{"id":\#(id),"op":"ping"}"#.utf8)), from: bob) }
        held.signal()
        var ids: [RequestID?] = []
        for _ in 1...3 { ids.append(try #require(await bob.answer()).id) }
        #expect(ids == [.number(1), .number(2), .number(3)])
    }

    @Test("a connection's later request waits behind its earlier one, even when another connection's lookup fills the cache meanwhile")
    func orderWhenAnotherLookupFillsTheCache() async throws {
        // Kept an hour: a loaded machine can take more than the 10 s between two steps.
        let fixture = Fixture(kept: .seconds(3_600))
        let first = DispatchSemaphore(value: 0), second = DispatchSemaphore(value: 0)
        // A failed expectation must not leave the lookup thread held (the test process would never end).
        defer { first.signal(); second.signal() }
        fixture.service.lookups.submit { first.wait() }
        let other = Recorder(uid: Fixture.alice), alice = Recorder(uid: Fixture.alice)
        // The other connection's lookup, then (after a held job) alice's first request's. The loop
        // takes requests when it gets to them: root's ping, answered there, says it took the other's
        // (and so queued its lookup) before the held job is queued.
        fixture.service.receivedOnLoop(.line(Array(#"{"id":10,"op":"ping"}"#.utf8)), from: other)
        #expect(try #require(await fixture.ask(#"{"id":4,"op":"ping"}"#, as: Recorder(uid: 0))).ok == true)
        fixture.service.lookups.submit { second.wait() }
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"ping"}"#.utf8)), from: alice)
        first.signal()
        #expect(try #require(await other.answer()).id == .number(10))
        #expect(fixture.service.groupCache.withLock { $0[Fixture.alice] } != nil)
        // Alice's second request finds her groups cached, but her first still waits for its lookup.
        fixture.service.receivedOnLoop(.line(Array(#"{"id":2,"op":"ping"}"#.utf8)), from: alice)
        fixture.service.receivedOnLoop(.line(Array("not json".utf8)), from: alice)
        // Root's ping is taken after alice's on the loop: once it is answered, hers were taken.
        #expect(try #require(await fixture.ask(#"{"id":3,"op":"ping"}"#, as: Recorder(uid: 0))).ok == true)
        #expect(alice.sentCount == 0, "answered before the request that came first")
        second.signal()
        var ids: [RequestID?] = []
        for _ in 1...3 { ids.append(try #require(await alice.answer()).id) }
        #expect(ids == [.number(1), .number(2), nil])
    }

    @Test("a refusal names the peer's user as the lookup thread found it with its groups: the loop never asks the user database")
    func refusalNamesTheUserFromTheLookup() async throws {
        let loop = Locked<Reactor?>(nil)
        // Where each name lookup ran once the service serves (true: on the loop); those at its
        // start (root's and batond's own user's, before anything is served) are not counted.
        let asked = Locked<[Bool]>([])
        let fixture = Fixture(userName: { uid in
            if let reactor = loop.withLock({ $0 }) { asked.withLock { $0.append(reactor.isCurrent) } }
            return uid == Fixture.bob ? "bob" : nil
        }, kept: .seconds(3_600))
        loop.withLock { $0 = fixture.conductor.reactor }
        // Bob may not trigger deploy (alice and the ops group may).
        let bob = Recorder(uid: Fixture.bob)
        let refused = try #require(await fixture.ask(#"{"id":1,"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, as: bob))
        #expect(refused.error?.code == .forbidden)
        #expect(refused.error?.message == "uid \(Fixture.bob) (bob) may not trigger deploy")
        #expect(asked.withLock { $0 } == [false], "the name was asked once, off the loop")
        // A uid the lookup found no name for is named by its number.
        let carol = Recorder(uid: 60_003)
        let unnamed = try #require(await fixture.ask(#"{"id":2,"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, as: carol))
        #expect(unnamed.error?.message == "uid 60003 may not trigger deploy")
        #expect(asked.withLock { $0 } == [false, false])
    }

    @Test("groups that outlived their 10 s are used on the loop (a watch's next update) while the lookup thread reads them again",
          .timeLimit(.minutes(5)))
    func staleGroupsRefreshedOffTheLoop() async throws {
        let loop = Locked<Reactor?>(nil)
        let asked = Locked<[Bool]>([])
        // Each lookup's end (after its entry is written), awaited without a clock: a loaded machine
        // took more than the 10 s a semaphore's wait allowed (issue 39's session: 73 s at load 20).
        let (lookups, lookedUp) = AsyncStream.makeStream(of: Void.self)
        let fixture = Fixture(userName: { uid in
            if let reactor = loop.withLock({ $0 }) { asked.withLock { $0.append(reactor.isCurrent) } }
            return "alice"
        })
        loop.withLock { $0 = fixture.conductor.reactor }
        let alice = Recorder(uid: Fixture.alice)
        _ = try #require(await fixture.ask(#"{"id":1,"op":"status"}"#, as: alice))
        #expect(asked.withLock { $0 } == [false], "looked up once, off the loop, before the request was served")
        // Aged past the 10 s: a check on the loop answers from the entry and asks for a refresh.
        let aged = ContinuousClock.now - .seconds(20)
        fixture.service.groupCache.withLock { $0[Fixture.alice]?.at = aged }
        // The refresh's end: the lookup thread runs one job at a time, so a job submitted after the
        // check's refresh runs once that refresh has written its entry.
        let allowed = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            fixture.conductor.reactor.post {
                done.resume(returning: fixture.service.allowed(.trigger, "deploy", fixture.service.generation, alice.peer))
                fixture.service.lookups.submit { lookedUp.yield() }
            }
        }
        #expect(allowed)
        var ends = lookups.makeAsyncIterator()
        _ = await ends.next()
        #expect(asked.withLock { $0 } == [false, false], "the first lookup, then the refresh's, each off the loop, never on it")
        #expect(fixture.service.groupCache.withLock { $0[Fixture.alice].map { $0.at > aged } } == true, "the refresh wrote a newer entry")
    }
}
