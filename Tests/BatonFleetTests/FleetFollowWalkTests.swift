import BatonCore
@testable import BatonFleet
import Testing

/// A `wait` on another host's run, as `FleetCoordinator.attach` and `follow` take it, against a
/// feed that delivers the run's transitions in order and a refresh that may read ahead of it: a
/// follower starts from the loop's table with no read (`CoordinatorState.followable`), or from a
/// read of the row whose answer comes back later, reading back what it may have missed only where
/// the table says something after its read was delivered (`readsBack`); catch-up reads are in
/// flight at once and answered in any order. Whatever the order, every follower hears each
/// transition after the one it began from once, in order, then the end.
@Suite("Fleet follows: the table lagging or leading the database, catch-ups in any order")
struct FleetFollowWalkTests {
    typealias Heard = RemoteFollowersTests.Heard
    static let id = RemoteFollowersTests.id

    /// What the walk keeps: the database's last seq, the feed's, the followers and what each began from.
    struct World {
        var last: Int
        var committed = 1
        var delivered = 0
        var state = CoordinatorState(limit: 2)
        var heard: [(Heard, from: Int)] = []
        var reads: [Int] = []
        var catchUps: [(id: Int, after: Int)] = []
        var answers: [(id: Int, updates: [RunUpdate])] = []
        var fastPaths = 0, readBacks = 0, skips = 0

        func update(_ seq: Int) -> RunUpdate { RemoteFollowersTests.update(seq, last: last) }
    }

    /// One step of the walk, picked by `choice`, on the loop.
    static func step(_ choice: UInt64, _ world: inout World, _ followers: RemoteFollowers, _ random: inout SplitMix,
                     at now: ContinuousClock.Instant) {
        switch choice % 8 {
        case 0 where world.committed < world.last:
            world.committed += 1
        case 1 where world.delivered < world.committed:
            // The feed delivers the next transition, in order: the table first, then the followers.
            world.delivered += 1
            let update = world.update(world.delivered)
            _ = world.state.handle(.delivered(update.run, ended: update.run.phase.isTerminal))
            followers.deliver(update)
            _ = world.state.handle(.caughtUp(at: now))
        case 2:
            // A refresh reads the rows now: ahead of the feed's deliveries, or the run gone.
            let ended = world.committed == world.last
            _ = world.state.handle(.refreshedChanges(changed: ended ? [] : [world.update(world.committed).run], gone: ended ? [Self.id] : []))
        case 3:
            // A wait: from the table, or a read of the row (answered later); now and then the
            // feed's last catch-up is too old (a feed stuck) and the row is read.
            let heard = Heard()
            if case let (known, seq)? = world.state.followable(Self.id, at: random.next() % 3 == 0 ? now + .seconds(3) : now) {
                world.fastPaths += 1
                _ = followers.add(known, seq: seq, heard.follower)
                world.heard.append((heard, from: seq))
            } else if world.committed < world.last {
                world.reads.append(world.committed)
            }
        case 4 where !world.reads.isEmpty:
            // A read's answer: its follower is registered, and reads back if the table says so.
            let seq = world.reads.remove(at: Int(random.next() % UInt64(world.reads.count)))
            let heard = Heard()
            world.heard.append((heard, from: seq))
            let back = world.state.readsBack(Self.id, after: seq, at: random.next() % 4 == 0 ? now + .seconds(3) : now)
            guard let id = followers.add(world.update(seq).run, seq: seq, catchingUp: back, heard.follower) else { return }
            if back {
                world.readBacks += 1
                world.catchUps.append((id, seq))
            } else {
                world.skips += 1
            }
        case 5 where !world.catchUps.isEmpty:
            // A catch-up reads what is committed after its follower's seq now.
            let asked = world.catchUps.remove(at: Int(random.next() % UInt64(world.catchUps.count)))
            let after = asked.after + 1
            world.answers.append((asked.id, after > world.committed ? [] : (after...world.committed).map(world.update)))
        case 6 where !world.answers.isEmpty:
            // Catch-ups are answered in any order.
            let answer = world.answers.remove(at: Int(random.next() % UInt64(world.answers.count)))
            followers.caughtUp(Self.id, answer.updates, for: answer.id)
        default:
            break
        }
    }

    /// One walk: 300 random steps, then everything comes (commits, the feed, the reads' answers,
    /// the catch-ups' reads and answers), in random order; the world as it ends.
    static func walk(seed: Int) async -> World? {
        let reactor = Reactor(), followers = RemoteFollowers(reactor: reactor)
        let result = Locked<World?>(nil)
        await RemoteFollowersTests.onLoop(reactor) {
            var random = SplitMix(seed: UInt64(seed) &* 0xD1B5_4A32_D192_ED03 &+ 3)
            let now = ContinuousClock.now
            var world = World(last: 4 + Int(random.next() % 40))
            // The run in the table from the start, or only once the feed delivers or refreshes it.
            _ = world.state.handle(.refreshed(seed % 2 == 0 ? [world.update(1).run] : []))
            _ = world.state.handle(.caughtUp(at: now))
            for _ in 0..<300 { Self.step(random.next(), &world, followers, &random, at: now) }
            // No read is asked once the run ended in the database, so this ends.
            while world.committed < world.last || world.delivered < world.last || !world.reads.isEmpty
                    || !world.catchUps.isEmpty || !world.answers.isEmpty {
                Self.step(random.next(), &world, followers, &random, at: now)
            }
            result.withLock { $0 = world }
        }
        return result.withLock { $0 }
    }

    @Test("every follower hears each transition after its start once, in order, then the end", arguments: 0..<200)
    func walk(seed: Int) async {
        guard let world = await Self.walk(seed: seed) else { Issue.record("the walk did not run"); return }
        for (heard, from) in world.heard {
            let expected = from == world.last ? [0, -1] : [0] + Array((from + 1)...world.last) + [-1]
            #expect(heard.all == expected, "a follower from seq \(from) (fast paths \(world.fastPaths), read backs \(world.readBacks))")
        }
    }

    @Test("over the walks, followers start from the table, read back, and skip the read back")
    func walksCoverThePaths() async {
        // Each path is taken in some seed (else the walk tests less than it says).
        var totals = (fast: 0, back: 0, skip: 0)
        for seed in 0..<60 {
            guard let world = await Self.walk(seed: seed) else { continue }
            totals = (totals.fast + world.fastPaths, totals.back + world.readBacks, totals.skip + world.skips)
        }
        #expect(totals.fast > 0 && totals.back > 0 && totals.skip > 0, "\(totals)")
    }
}
