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
    /// Own commit `xid` whose snapshot is `text`, asked from `mark`, PostgreSQL naming `writers` as
    /// having written transitions since; with a transition unless `empty`.
    static func commit(_ xid: UInt64, _ text: String, writers: Set<UInt64> = [], since: UInt64, inProgress: [UInt64] = [],
                       empty: Bool = false) -> OwnCommit {
        OwnCommit(xid: xid, snapshot: snapshot(text), mark: .init(since: since, inProgress: inProgress), writers: writers,
                  rows: empty ? [] : [["\(xid)"]], began: .now)
    }

    @Test("verdicts: no position or midway, read already, covered, a writer not delivered, a transaction that wrote nothing, an empty commit")
    func verdicts() {
        var ahead = FeedAhead()
        #expect(ahead.admit(Self.commit(12, "12:13:", since: 12), position: nil) == .catchUp)
        var midway = Self.position("10:12:10")
        midway.read(FeedPosition.page, target: Self.snapshot("12:13:"), lastID: 40)
        #expect(ahead.admit(Self.commit(12, "12:13:", since: 12), position: midway) == .catchUp)
        #expect(ahead.mark(midway) == nil && ahead.mark(nil) == nil)
        let at = Self.position("10:12:10")
        #expect(ahead.mark(at) == .init(since: 12, inProgress: [10]))
        // A catch-up read it already.
        #expect(ahead.admit(Self.commit(11, "10:12:10", since: 12, inProgress: [10]), position: at) == .none)
        // 10 still in progress in the commit's snapshot: it holds no key the commit took.
        #expect(ahead.admit(Self.commit(12, "10:13:10", since: 12, inProgress: [10]), position: at) == .deliver)
        #expect(ahead.admit(Self.commit(12, "10:13:10", since: 12, inProgress: [10]), position: at) == .none, "handed twice")
        #expect(ahead.mark(at) == .init(since: 13, inProgress: [10]))
        // 10 finished with transitions nobody delivered: a catch-up first.
        #expect(ahead.admit(Self.commit(13, "13:14:", writers: [10], since: 13, inProgress: [10]), position: at) == .catchUp)
        // 14 unknown to the feed, seen finished by the commit, and it wrote transitions.
        #expect(ahead.admit(Self.commit(15, "10:16:10", writers: [14], since: 13, inProgress: [10]), position: at) == .catchUp)
        #expect(ahead.excluded == [12])
    }

    @Test("transactions that wrote no transitions (another database's, the lease's, a subtransaction, an aborted one) hold up no commit, once or later")
    func nonWriters() {
        var ahead = FeedAhead()
        let at = Self.position("30:30:")
        // 31 is 30's savepoint, 32 another database's, both finished before 30's snapshot.
        #expect(ahead.admit(Self.commit(30, "30:33:", since: 30), position: at) == .deliver)
        #expect(ahead.mark(at) == .init(since: 33, inProgress: []))
        // 33 another host's with transitions, in progress at the mark; it commits before 35's snapshot.
        #expect(ahead.admit(Self.commit(34, "33:35:33", since: 33), position: at) == .deliver)
        #expect(ahead.admit(Self.commit(35, "35:36:", writers: [33], since: 33), position: at) == .catchUp)
        #expect(ahead.mark(at) == .init(since: 35, inProgress: [33]), "33 looked at again until a catch-up")
        // A commit of this host with nothing to deliver: none, and it holds up nobody.
        #expect(ahead.admit(Self.commit(36, "33:37:33", writers: [35], since: 33, empty: true), position: at) == .none)
        #expect(ahead.excluded == [30, 34])
        ahead.caughtUp(to: Self.snapshot("37:37:"))
        #expect(ahead.excluded == [] && ahead.mark(Self.position("37:37:")) == .init(since: 37, inProgress: []))
    }

    @Test("a run of own commits is delivered one after another; a catch-up forgets what its snapshot sees and leaves out the rest")
    func runOfCommits() {
        var ahead = FeedAhead()
        let position = Self.position("20:20:")
        for xid in UInt64(20)..<220 {
            let mark = ahead.mark(position)!
            #expect(ahead.admit(Self.commit(xid, "\(xid):\(xid + 1):", since: mark.since), position: position) == .deliver, "xid \(xid)")
        }
        #expect(ahead.excluded.count == 200)
        // Another host's 220 is in progress in the catch-up's snapshot; 221 is this host's.
        #expect(ahead.admit(Self.commit(221, "220:222:220", since: 220), position: position) == .deliver)
        ahead.caughtUp(to: Self.snapshot("220:221:220"))
        #expect(ahead.excluded == [221])
        let after = Self.position("220:221:220")
        #expect(ahead.mark(after) == .init(since: 222, inProgress: [220]))
        #expect(ahead.admit(Self.commit(222, "222:223:", writers: [220], since: 222, inProgress: [220]), position: after) == .catchUp,
                "220 finished undelivered")
        #expect(ahead.admit(Self.commit(222, "220:223:220", since: 222, inProgress: [220]), position: after) == .deliver)
        ahead.caughtUp(to: Self.snapshot("223:223:"))
        #expect(ahead.excluded == [])
    }

    /// The model: transactions begin (taking an id), write one key once its last writer
    /// committed (taking a transition id; half of them in a savepoint, a subtransaction with an id
    /// of its own), or write nothing (another database's, the lease's), and commit or abort; the
    /// feed reads by snapshots, which list top-level transactions in progress only, never the
    /// snapshot's own.
    struct World {
        struct Transaction {
            var xid: UInt64
            var key: Int
            var own: Bool
            var sub: UInt64?
            var id: Int?
            var finished = false
            var aborted = false
            /// The feed's mark as its committer read it, at its begin or its write (catch-ups may come
            /// between it and the snapshot).
            var mark: FeedAhead.Mark?
            /// Committed with transitions.
            var wrote: Bool { finished && !aborted && id != nil }
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

        func transaction(_ xid: UInt64) -> Transaction { transactions[index[xid]!] }

        /// PostgreSQL's snapshot now, taken by `taker`: `xmax` one past the latest finished id
        /// (subtransactions included), the top-level transactions in progress below it listed.
        func now(taker: UInt64? = nil) -> FeedSnapshot {
            let finished = transactions.filter(\.finished).flatMap { [$0.xid] + ($0.sub.map { [$0] } ?? []) }
            let xmax = (finished.max() ?? 99) + 1
            let running = transactions.filter { !$0.finished && $0.xid < xmax && $0.xid != taker }.map(\.xid)
            let xmin = running.min() ?? xmax
            return FeedSnapshot("\(xmin):\(xmax):" + running.map(String.init).joined(separator: ","))!
        }

        /// What `OwnCommit.statements` asks of transaction `xid` from `mark`: the others that committed transitions since.
        func writers(since mark: FeedAhead.Mark, but xid: UInt64) -> Set<UInt64> {
            Set(transactions.filter { $0.wrote && $0.xid != xid && ($0.xid >= mark.since || mark.inProgress.contains($0.xid)) }.map(\.xid))
        }
    }

    @Test("walk: own commits handed in any order and catch-ups at any time deliver every transaction once, each key's in order", arguments: 0..<1000)
    func walk(seed: Int) { _ = Self.walked(seed) }

    @Test("the walks deliver own commits ahead: the coverage is not vacuous")
    func ahead() {
        let (direct, handed) = (0..<100).map(Self.walked).reduce((0, 0)) { ($0.0 + $1.direct, $0.1 + $1.handed) }
        #expect(direct * 4 > handed, "\(direct) of \(handed) own commits delivered ahead")
    }

    /// One walk; how many own commits with transitions it handed over, and how many of them were delivered ahead.
    static func walked(_ seed: Int) -> (direct: Int, handed: Int) {
        var random = SplitMix(seed: UInt64(seed) &* 0xD1B5_4A32_D192_ED03 &+ 11)
        var world = World()
        var ahead = FeedAhead()
        var handed: [OwnCommit] = []
        var delivered: [UInt64] = []
        var (direct, count) = (0, 0)
        // The feed starts from a snapshot before anything.
        var position = FeedPosition(seen: world.now())
        func catchUp() {
            let target = world.now()
            let fresh = world.transactions.filter { transaction in
                transaction.wrote && target.sees(transaction.xid) && !position.seen.sees(transaction.xid)
                    && !ahead.excluded.contains(transaction.xid)
            }
            delivered += fresh.sorted { $0.id! < $1.id! }.map(\.xid)
            position = FeedPosition(seen: target)
            ahead.caughtUp(to: target)
        }
        func admit(_ commit: OwnCommit) {
            guard ahead.admit(commit, position: position) == .deliver else { return }
            delivered.append(commit.xid)
            direct += 1
        }
        // Catch-ups one step in ten: several commits of this host, and others', come between two.
        for _ in 0..<240 {
            switch random.next() % 10 {
            case 0, 1 where world.transactions.count < 60:
                world.begin(key: Int(random.next() % 3), own: random.next() % 4 != 0)
                // Half of the committers read the mark before they take their key's row (the writer does).
                if random.next() % 2 == 0 { world.transactions[world.transactions.count - 1].mark = ahead.mark(position) }
            case 2, 3:
                // A transaction whose key's last writer finished takes the row and writes (nine in ten).
                let waiting = world.transactions.filter { transaction in
                    transaction.id == nil && !transaction.finished && (world.holders[transaction.key]?.last).map { world.transaction($0).finished } ?? true
                }
                guard let chosen = waiting.randomElement(using: &random), random.next() % 10 != 0 else { continue }
                world.write(chosen.xid, savepoint: random.next() % 2 == 0)
                if chosen.mark == nil { world.transactions[world.index[chosen.xid]!].mark = ahead.mark(position) }
            case 4, 5:
                // One commits (or, one in eight, aborts): this host's reads the feed's mark, takes its
                // snapshot after its writes, asks which transactions wrote since, and hands it over later.
                let open = world.transactions.filter { !$0.finished }
                guard let chosen = open.randomElement(using: &random) else { continue }
                let mark = chosen.mark ?? ahead.mark(position)
                let snapshot = world.now(taker: chosen.xid)
                let aborted = random.next() % 8 == 0
                world.transactions[world.index[chosen.xid]!].finished = true
                world.transactions[world.index[chosen.xid]!].aborted = aborted
                guard chosen.own, !aborted, let mark else { continue }
                let commit = OwnCommit(xid: chosen.xid, snapshot: snapshot, mark: mark, writers: world.writers(since: mark, but: chosen.xid),
                                       rows: chosen.id == nil ? [] : [["\(chosen.xid)"]], began: .now)
                if chosen.id != nil { count += 1 }
                handed.insert(commit, at: Int(random.next() % UInt64(handed.count + 1)))
            case 6, 7, 8:
                guard !handed.isEmpty else { continue }
                admit(handed.removeFirst())
            default:
                catchUp()
            }
        }
        handed.forEach(admit)
        catchUp()
        let wrote = world.transactions.filter(\.wrote).map(\.xid)
        #expect(delivered.sorted() == wrote.sorted(), "seed \(seed): each committed transaction with transitions once")
        for (key, order) in world.holders {
            let done = order.filter { world.transaction($0).wrote }
            #expect(delivered.filter(done.contains) == done, "seed \(seed): key \(key)'s transactions out of order")
        }
        return (direct, count)
    }
}
