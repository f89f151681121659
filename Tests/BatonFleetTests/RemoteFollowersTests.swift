import BatonCore
@testable import BatonFleet
import Testing

/// Followers of a fleet's run (`RemoteFollowers`): the feed tells each follower every transition
/// it has not heard, in order; a catch-up read is told to the one follower it was read for, so
/// that a follower registered earlier still hears the older transitions the feed brings next;
/// what the feed brings a follower while its catch-up is in flight waits for the catch-up.
@Suite("RemoteFollowers: a catch-up read is told to its follower alone")
struct RemoteFollowersTests {
    static let id: Int64 = 7
    /// The run's last transition: its end.
    static let last = 6

    /// The run as it was after transition `seq` (queued, loading, then retrying and loading in
    /// turn, and success at `last`), with that transition.
    static func update(_ seq: Int, last: Int = last) -> RunUpdate {
        let phase: Phase = seq == 1 ? .queued : seq == last ? .success : seq % 2 == 0 ? .loading : .retrying
        let from: Phase? = seq == 1 ? nil : update(seq - 1, last: last).run.phase
        var run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .join, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        run.seq = seq
        return RunUpdate(run: run, transition: Transition(runID: id, seq: seq, from: from, to: phase, at: Timestamp(rawValue: Int64(seq))))
    }

    /// What one follower heard: the seq of each transition, 0 for the run as it began to follow, -1 for the end (nil).
    final class Heard: Sendable {
        let seqs = Locked<[Int]>([])
        var follower: Conductor.Follower {
            { [seqs] update in seqs.withLock { $0.append(update.map { $0.transition?.seq ?? 0 } ?? -1) } }
        }
        var all: [Int] { seqs.withLock { $0 } }
    }

    /// Runs `body` on `reactor`'s loop (where the followers are owned) and waits for it.
    static func onLoop(_ reactor: Reactor, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            reactor.post {
                body()
                done.resume()
            }
        }
    }

    @Test("the review's case: a catch-up for a follower registered at 4 does not make one registered at 2 drop 3 and 4")
    func catchUpForOne() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let first = Heard(), second = Heard()
        await Self.onLoop(reactor) {
            // F1 from the loop's table at seq 2; 3, 4 and 5 commit; a refresh hands 5; F2 is
            // registered after a read at 4, and the table (5) says to read back: 5 is read.
            _ = followers.add(Self.update(2).run, seq: 2, first.follower)
            guard let id = followers.add(Self.update(4).run, seq: 4, catchingUp: true, second.follower) else { return }
            followers.caughtUp(Self.id, [Self.update(5)], for: id)
            // The feed then delivers what it had not yet, in order.
            for seq in 3...Self.last { followers.deliver(Self.update(seq)) }
        }
        #expect(first.all == [0, 3, 4, 5, 6, -1])
        #expect(second.all == [0, 5, 6, -1])
    }

    @Test("two followers' catch-ups in flight at once, answered out of order, before the feed's deliveries")
    func concurrentCatchUps() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let first = Heard(), second = Heard(), third = Heard()
        await Self.onLoop(reactor) {
            guard let one = followers.add(Self.update(2).run, seq: 2, catchingUp: true, first.follower),
                  let two = followers.add(Self.update(3).run, seq: 3, catchingUp: true, second.follower) else { return }
            _ = followers.add(Self.update(2).run, seq: 2, third.follower)
            // The second's read came later (it saw 5) and is answered first; the first's saw 4.
            followers.caughtUp(Self.id, [Self.update(4), Self.update(5)], for: two)
            followers.caughtUp(Self.id, [Self.update(3), Self.update(4)], for: one)
            for seq in 3...Self.last { followers.deliver(Self.update(seq)) }
        }
        #expect(first.all == [0, 3, 4, 5, 6, -1])
        #expect(second.all == [0, 4, 5, 6, -1])
        #expect(third.all == [0, 3, 4, 5, 6, -1], "a follower with no catch-up hears the feed alone")
    }

    @Test("a catch-up that reads the end ends its follower only; the others hear the end from the feed")
    func catchUpReadsTheEnd() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let first = Heard(), second = Heard()
        let left = Locked<[Int]>([])
        await Self.onLoop(reactor) {
            _ = followers.add(Self.update(2).run, seq: 2, first.follower)
            guard let id = followers.add(Self.update(4).run, seq: 4, catchingUp: true, second.follower) else { return }
            followers.caughtUp(Self.id, [Self.update(5), Self.update(6)], for: id)
            left.withLock { $0.append(followers.count(of: Self.id)) }
            for seq in 3...Self.last { followers.deliver(Self.update(seq)) }
            left.withLock { $0.append(followers.count(of: Self.id)) }
        }
        #expect(second.all == [0, 5, 6, -1])
        #expect(first.all == [0, 3, 4, 5, 6, -1])
        #expect(left.withLock { $0 } == [1, 0], "the ended follower is gone at once; the other at the feed's end")
    }

    @Test("following a run that has ended: told the run and its end at once, no follower kept, no id to read back for")
    func endedRun() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let heard = Heard()
        let id = Locked<Int?>(0)
        await Self.onLoop(reactor) {
            let added = followers.add(Self.update(Self.last).run, seq: Self.last, heard.follower)
            id.withLock { $0 = added }
        }
        #expect(heard.all == [0, -1])
        #expect(id.withLock { $0 } == nil)
    }

    @Test("the feed runs ahead of a follower's catch-up: what it brings is held and told after the read, in order")
    func feedAheadOfCatchUp() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let heard = Heard(), before = Locked<[Int]>([])
        await Self.onLoop(reactor) {
            guard let id = followers.add(Self.update(2).run, seq: 2, catchingUp: true, heard.follower) else { return }
            // The feed delivered 3 before the follower was registered, then brings 4 to the end.
            for seq in 4...Self.last { followers.deliver(Self.update(seq)) }
            before.withLock { $0 = heard.all }
            followers.caughtUp(Self.id, [Self.update(3), Self.update(4)], for: id)
        }
        #expect(before.withLock { $0 } == [0])
        #expect(heard.all == [0, 3, 4, 5, 6, -1])
    }

    @Test("a catch-up that failed (answered with nothing) releases what the feed brought meanwhile")
    func failedCatchUp() async {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let heard = Heard()
        await Self.onLoop(reactor) {
            guard let id = followers.add(Self.update(2).run, seq: 2, catchingUp: true, heard.follower) else { return }
            followers.deliver(Self.update(3))
            followers.caughtUp(Self.id, [], for: id)
            for seq in 4...Self.last { followers.deliver(Self.update(seq)) }
        }
        #expect(heard.all == [0, 3, 4, 5, 6, -1])
    }
}
