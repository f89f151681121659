import BatonCore
import BatonEngine
@testable import BatonFleet
import Testing

/// A host's own commits delivered ahead of its feed's catch-ups (`FeedAhead`): the verdicts as a
/// table, and a walk of a model database (transactions on keys, each taking its key's row after
/// the last writer of that key committed; some of this host, handed to the feed in any order;
/// catch-ups at any time) in which every transaction must be delivered once, each key's in order.
@Suite("FeedAhead: own commits delivered at once only when nothing they may follow is undelivered")
struct FeedAheadTests {
    static func snapshot(_ text: String) -> FeedSnapshot { FeedSnapshot(text)! }
    static func position(_ text: String) -> FeedPosition { FeedPosition(seen: snapshot(text)) }

    @Test("verdicts: no position or midway, seen already, covered, a gap, a transaction seen in progress that finished since")
    func verdicts() {
        var ahead = FeedAhead()
        #expect(ahead.admit(12, snapshot: Self.snapshot("12:13:"), position: nil) == .catchUp)
        var midway = Self.position("10:12:10")
        midway.read(FeedPosition.page, target: Self.snapshot("12:13:"), lastID: 40)
        #expect(ahead.admit(12, snapshot: Self.snapshot("12:13:"), position: midway) == .catchUp)
        // A catch-up read it already.
        #expect(ahead.admit(11, snapshot: Self.snapshot("10:12:10"), position: Self.position("10:12:10")) == .read)
        // 10 still in progress in the commit's snapshot: it holds no key the commit took.
        #expect(ahead.admit(12, snapshot: Self.snapshot("10:13:10"), position: Self.position("10:12:10")) == .deliver)
        #expect(ahead.admit(12, snapshot: Self.snapshot("10:13:10"), position: Self.position("10:12:10")) == .read, "handed twice")
        // 10 finished, and nobody delivered it: a catch-up first.
        #expect(ahead.admit(13, snapshot: Self.snapshot("13:14:"), position: Self.position("10:12:10")) == .catchUp)
        // 14 unknown to the feed, seen finished by the commit.
        #expect(ahead.admit(15, snapshot: Self.snapshot("10:16:10"), position: Self.position("10:12:10")) == .catchUp)
        #expect(ahead.excluded == [12])
    }

    @Test("a subtransaction of the commit (its savepoint's writes) seen finished is its own; once delivered, later commits' too")
    func subtransactions() {
        var ahead = FeedAhead()
        let position = Self.position("30:30:")
        // 31 is 30's savepoint; 32, another host's, finished before 30's snapshot, so 31 shows as finished.
        #expect(ahead.admit(30, snapshot: Self.snapshot("30:33:"), position: position) == .catchUp, "31 and 32 unknown")
        #expect(ahead.admit(30, subtransactions: [31], snapshot: Self.snapshot("30:33:"), position: position) == .catchUp, "32 unknown")
        #expect(ahead.admit(30, subtransactions: [31], snapshot: Self.snapshot("30:33:32"), position: position) == .deliver)
        #expect(ahead.admit(33, snapshot: Self.snapshot("32:34:32"), position: position) == .deliver, "31 delivered with 30")
        #expect(ahead.excluded == [30, 31, 33])
        // A row's xmin is 32 bits: a subtransaction after the low half wrapped is in the next epoch.
        #expect(OwnCommit.widened(7, after: (5 << 32) | 3) == (5 << 32) | 7)
        #expect(OwnCommit.widened(2, after: (5 << 32) | 0xFFFF_FFFE) == (6 << 32) | 2)
        #expect(OwnCommit.widened(0xFFFF_FFFE, after: (5 << 32) | 0xFFFF_FFFE) == (5 << 32) | 0xFFFF_FFFE)
    }

    @Test("a run of own commits is delivered one after another; a catch-up forgets what its snapshot sees and leaves out the rest")
    func runOfCommits() {
        var ahead = FeedAhead()
        let position = Self.position("20:20:")
        for xid in UInt64(20)..<220 {
            #expect(ahead.admit(xid, snapshot: Self.snapshot("\(xid):\(xid + 1):"), position: position) == .deliver, "xid \(xid)")
        }
        #expect(ahead.excluded.count == 200)
        // Another host's 220 is in progress in the catch-up's snapshot; 221 is this host's.
        #expect(ahead.admit(221, snapshot: Self.snapshot("220:222:220"), position: position) == .deliver)
        ahead.caughtUp(to: Self.snapshot("220:221:220"))
        #expect(ahead.excluded == [221])
        let after = Self.position("220:221:220")
        #expect(ahead.admit(222, snapshot: Self.snapshot("222:223:"), position: after) == .catchUp, "220 finished undelivered")
        #expect(ahead.admit(222, snapshot: Self.snapshot("220:223:220"), position: after) == .deliver)
        ahead.caughtUp(to: Self.snapshot("223:223:"))
        #expect(ahead.excluded == [])
    }

    /// The model: transactions begin (taking an id), write one key once its last writer
    /// committed (taking a transition id; half of them in a savepoint, a subtransaction with an id
    /// of its own), and commit; the feed reads by snapshots, which list no subtransaction.
    struct World {
        struct Transaction {
            var xid: UInt64
            var key: Int
            var own: Bool
            var sub: UInt64?
            var id: Int?
            var committed = false
        }
        var transactions: [Transaction] = []
        var index: [UInt64: Int] = [:]
        /// Each key's transactions in the order they took its row.
        var holders: [Int: [UInt64]] = [:]
        var nextID = 1
        var nextXid: UInt64 = 100

        mutating func begin(key: Int, own: Bool) {
            index[nextXid] = transactions.count
            transactions.append(Transaction(xid: nextXid, key: key, own: own))
            nextXid += 1
        }

        mutating func write(_ xid: UInt64, savepoint: Bool) {
            let at = index[xid]!
            transactions[at].id = nextID
            nextID += 1
            if savepoint {
                transactions[at].sub = nextXid
                nextXid += 1
            }
            holders[transactions[at].key, default: []].append(xid)
        }

        func committed(_ xid: UInt64) -> Bool { transactions[index[xid]!].committed }

        /// PostgreSQL's snapshot now: `xmax` one past the latest finished id (subtransactions
        /// included), the top-level transactions in progress below it listed.
        var now: FeedSnapshot {
            let finished = transactions.filter(\.committed).flatMap { [$0.xid] + ($0.sub.map { [$0] } ?? []) }
            let xmax = (finished.max() ?? 99) + 1
            let running = transactions.filter { !$0.committed && $0.xid < xmax }.map(\.xid)
            let xmin = running.min() ?? xmax
            return FeedSnapshot("\(xmin):\(xmax):" + running.map(String.init).joined(separator: ","))!
        }
    }

    @Test("walk: own commits handed in any order and catch-ups at any time deliver every transaction once, each key's in order", arguments: 0..<300)
    func walk(seed: Int) { _ = Self.walked(seed) }

    @Test("the walks deliver own commits ahead, subtransactions' too: the coverage is not vacuous")
    func ahead() {
        let (direct, handed) = (0..<100).map(Self.walked).reduce((0, 0)) { ($0.0 + $1.direct, $0.1 + $1.handed) }
        #expect(direct * 4 > handed, "\(direct) of \(handed) own commits delivered ahead")
    }

    /// One walk; how many own commits it handed over, and how many of them were delivered ahead.
    static func walked(_ seed: Int) -> (direct: Int, handed: Int) {
        var random = SplitMix(seed: UInt64(seed) &* 0xD1B5_4A32_D192_ED03 &+ 11)
        var world = World()
        var ahead = FeedAhead()
        var handed: [(xid: UInt64, subs: [UInt64], snapshot: FeedSnapshot)] = []
        var delivered: [UInt64] = []
        var (direct, count) = (0, 0)
        // The feed starts from a snapshot before anything.
        var position = FeedPosition(seen: world.now)
        func catchUp() {
            let target = world.now
            let fresh = world.transactions.filter { transaction in
                transaction.committed && target.sees(transaction.xid) && !position.seen.sees(transaction.xid)
                    && !ahead.excluded.contains(transaction.xid)
            }
            delivered += fresh.sorted { $0.id! < $1.id! }.map(\.xid)
            position = FeedPosition(seen: target)
            ahead.caughtUp(to: target)
        }
        func admit(_ commit: (xid: UInt64, subs: [UInt64], snapshot: FeedSnapshot)) {
            guard ahead.admit(commit.xid, subtransactions: commit.subs, snapshot: commit.snapshot, position: position) == .deliver else { return }
            delivered.append(commit.xid)
            direct += 1
        }
        for _ in 0..<120 {
            switch random.next() % 5 {
            case 0 where world.transactions.count < 40:
                world.begin(key: Int(random.next() % 3), own: random.next() % 4 != 0)
            case 1:
                // A transaction whose key's last writer committed takes the row and writes.
                let waiting = world.transactions.filter { transaction in
                    transaction.id == nil && (world.holders[transaction.key]?.last).map(world.committed) ?? true
                }
                guard let chosen = waiting.randomElement(using: &random) else { continue }
                world.write(chosen.xid, savepoint: random.next() % 2 == 0)
            case 2:
                // One that wrote commits; this host's hands its snapshot (taken after its writes) to the feed later.
                let writing = world.transactions.filter { $0.id != nil && !$0.committed }
                guard let chosen = writing.randomElement(using: &random) else { continue }
                let snapshot = world.now
                world.transactions[world.index[chosen.xid]!].committed = true
                let subs = chosen.sub.map { [$0] } ?? []
                if chosen.own { count += 1 }
                if chosen.own { handed.insert((chosen.xid, subs, snapshot), at: Int(random.next() % UInt64(handed.count + 1))) }
            case 3:
                guard !handed.isEmpty else { continue }
                admit(handed.removeFirst())
            default:
                catchUp()
            }
        }
        handed.forEach(admit)
        catchUp()
        let committed = world.transactions.filter(\.committed).map(\.xid)
        #expect(delivered.sorted() == committed.sorted(), "seed \(seed): each committed transaction once")
        for (key, order) in world.holders {
            let done = order.filter(world.committed)
            #expect(delivered.filter(done.contains) == done, "seed \(seed): key \(key)'s transactions out of order")
        }
        return (direct, count)
    }
}
