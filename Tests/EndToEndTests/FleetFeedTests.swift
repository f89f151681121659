import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// Issue 25, item 1: the feed without the fleet's write lock, proved against a real PostgreSQL.
/// Writers lock their keys' slot rows with the statement the fleet uses (`FleetJournal.lockKeys`)
/// and write transitions as the fleet does (a run's `last_seq`, then the row); the feed's own
/// reading (`FleetFeed.page` with its `FeedPosition`) follows them. Each transition's `at`
/// carries its key's count (1, 2, 3… in the order the key's writers held its row), so that the
/// checks see each key's order, not only each run's.
@Suite("End to end: the fleet's feed follows commits, not ids", .serialized, .offPool)
struct FleetFeedTests {
    @Test("a transaction held open while later ones commit is delivered once it commits; reading ids after the last seen loses it")
    func heldOpen() throws {
        let (conninfo, runs) = try Self.database(keys: 3)
        let long = try PGConnection(conninfo), short = try PGConnection(conninfo), reader = try PGConnection(conninfo)
        // Open before the feed starts, so it is in progress in the feed's first snapshot.
        try long.execute("BEGIN")
        try Self.write(on: long, key: "k0", run: runs["k0"]![0])
        var feed = Feed(try FleetFeed.snapshot(on: reader))
        var old = OldFeed(after: try Self.maxID(on: reader))
        try Self.commit(on: short, key: "k1", run: runs["k1"]![0])
        try feed.read(on: reader)
        try old.read(on: reader)
        #expect(feed.delivered.map(\.key) == ["k1"], "the committed one, not the one in progress")
        try Self.write(on: long, key: "k2", run: runs["k2"]![1])
        try Self.commit(on: short, key: "k1", run: runs["k1"]![1])
        try feed.read(on: reader)
        try old.read(on: reader)
        try long.execute("COMMIT")
        try feed.read(on: reader)
        try old.read(on: reader)
        try feed.read(on: reader)

        let all = try Self.committed(on: reader)
        #expect(all.count == 4)
        #expect(feed.delivered.map(\.id).sorted() == all.map(\.id).sorted(), "every transition, once")
        #expect(Self.violations(feed.delivered, all: all).isEmpty)
        // The old reading passed the long transaction's ids while it was open: they are lost.
        #expect(old.delivered.map(\.key) == ["k1", "k1"])
        #expect(Self.violations(old.delivered, all: all) == ["2 transitions not delivered"])
    }

    @Test("concurrent writers on many keys, some transactions held open: every transition once, each key's in order")
    func concurrentWriters() throws {
        let (conninfo, runs) = try Self.database(keys: 12)
        let keys = runs.keys.sorted()
        let reader = try PGConnection(conninfo)
        var feed = Feed(try FleetFeed.snapshot(on: reader))
        let passes = Passes()
        let writers = 6, transactions = 120
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for writer in 0..<writers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let db = try PGConnection(conninfo)
                    var random = SplitMix(seed: UInt64(writer + 1))
                    for index in 0..<transactions {
                        let chosen = Array(Set((0..<Int.random(in: 1...3, using: &random)).map { _ in keys.randomElement(using: &random)! })).sorted()
                        try db.transaction(opening: [FleetJournal.lockKeys(runs: [], keys: chosen)]) { _ in
                            for key in chosen { try Self.write(on: db, key: key, run: runs[key]![Int.random(in: 0...1, using: &random)]) }
                            // One in eight is held open while the feed reads twice more (other
                            // writers, on other keys, commit meanwhile).
                            if index % 8 == writer % 8, !passes.wait(for: 2) {
                                failures.withLock { $0.append("writer \(writer): the feed did not read twice within 60 s of a held transaction") }
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("writer \(writer): \(error)") }
                }
            }
        }
        let done = Locked(false)
        group.notify(queue: .global()) { done.withLock { $0 = true } }
        while !done.withLock({ $0 }) {
            try feed.read(on: reader)
            passes.passed()
        }
        try feed.read(on: reader)
        #expect(failures.withLock { $0 } == [])

        let all = try Self.committed(on: reader)
        #expect(all.count >= writers * transactions)
        #expect(Self.violations(feed.delivered, all: all) == [])
        #expect(feed.pages > 1)
    }

    @Test("a catch-up longer than a page reads on from where the full page ended, with the same target")
    func pages() throws {
        let (conninfo, runs) = try Self.database(keys: 1)
        let db = try PGConnection(conninfo), reader = try PGConnection(conninfo)
        var feed = Feed(try FleetFeed.snapshot(on: reader))
        let long = try PGConnection(conninfo)
        try db.transaction {
            for _ in 0..<(FeedPosition.page + 20) { try Self.write(on: db, key: "k0", run: runs["k0"]![0]) }
        }
        // Opened after the target of the first page: not read until the page after the target.
        var position = feed.position
        let first = try FleetFeed.page(reader, &position)
        #expect(first.count == FeedPosition.page && position.midway)
        try long.execute("BEGIN")
        try Self.write(on: long, key: "k0", run: runs["k0"]![1])
        try long.execute("COMMIT")
        let second = try FleetFeed.page(reader, &position)
        #expect(second.count == 20 && !position.midway, "the rest of the target, not the commit after it")
        feed.position = position
        feed.take(first + second)
        try feed.read(on: reader)
        let all = try Self.committed(on: reader)
        #expect(all.count == FeedPosition.page + 21)
        #expect(Self.violations(feed.delivered, all: all) == [])
    }

    @Test("snapshot text: parsed, refused when malformed; what it sees")
    func snapshotText() {
        let snapshot = FeedSnapshot("100:104:100,102")
        #expect(snapshot?.inProgress == [100, 102])
        #expect(snapshot.map { [99, 100, 101, 102, 103, 104].map($0.sees) } == [true, false, true, false, true, false])
        #expect(FeedSnapshot("7:7:")?.inProgress == [])
        for bad in ["", "1:2", "2:1:", "a:2:", "1:2:x", "1:2:3,,4"] { #expect(FeedSnapshot(bad) == nil, "\(bad)") }
        var position = FeedPosition(seen: FeedSnapshot("5:9:5,7")!)
        #expect(position.parameters() == ["9", "{5,7}", nil, "0", "{}"])
        position.read(FeedPosition.page, target: FeedSnapshot("8:12:8")!, lastID: 40)
        #expect(position.parameters(excluding: [10, 11]) == ["9", "{5,7}", "8:12:8", "40", "{10,11}"] && position.midway)
        position.read(3, target: FeedSnapshot("8:12:8")!, lastID: 43)
        #expect(position.parameters() == ["12", "{8}", nil, "0", "{}"] && !position.midway)
    }

    @Test("schema 9: a batond that knows only 8 refuses the database, naming both versions; rows before it count as seen")
    func migration() throws {
        let conninfo = try Postgres.server().database()
        let db = try PGConnection(conninfo)
        #expect(try FleetSchema.migrate(db, through: 8) == 8)
        try db.query("INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (1, 'a', 'k', 'queued', 'join', 1, 'h', 'h/1')")
        try db.query("INSERT INTO transitions (run_id, seq, to_phase, at) VALUES (1, 1, 'queued', 1)")
        #expect(try FleetSchema.migrate(db, through: 9) == 9)
        #expect(try db.query("SELECT count(*) FROM transitions WHERE xid IS NOT NULL").first?[0] == "1")
        do {
            try FleetSchema.migrate(db, known: 8)
            Issue.record("a batond that knows version 8 migrated a database of version 9")
        } catch {
            #expect("\(error)" == "the database has fleet schema version 9, newer than this batond knows (8): upgrade Baton on this host")
        }
        #expect(try db.query("SELECT max(version) FROM baton_schema").first?[0] == "9", "nothing written by the refusal")
        // The feed reads the latest schema's run columns: the rows from before version 9 stay seen.
        #expect(try FleetSchema.migrate(db) == FleetSchema.latestVersion)
        var position = FeedPosition(seen: try FleetFeed.snapshot(on: db))
        #expect(try FleetFeed.page(db, &position).isEmpty)
    }

    // MARK: Writers

    /// A fresh database at the latest schema, with two queued runs per key `k0`, `k1`…
    static func database(keys: Int) throws -> (String, [String: [Int64]]) {
        let conninfo = try Postgres.server().database()
        let db = try PGConnection(conninfo)
        try FleetSchema.migrate(db)
        var runs: [String: [Int64]] = [:]
        for index in 0..<keys {
            let key = "k\(index)"
            try db.query("INSERT INTO keys (key) VALUES ($1)", [key])
            for _ in 0..<2 {
                let id = Int64(try db.query("""
                    INSERT INTO runs (action, key, phase, policy, queued_at, host, incarnation, last_seq)
                    VALUES ('a', $1, 'queued', 'queue', 1, 'h', 'h/1', 0) RETURNING id
                    """, [key]).first?[0] ?? "") ?? 0
                runs[key, default: []].append(id)
            }
        }
        return (conninfo, runs)
    }

    /// One transition of `run` (of `key`) in the caller's transaction, which holds the key's row:
    /// the run's next seq, and the key's next count in `at`.
    static func write(on db: PGConnection, key: String, run: Int64) throws {
        try db.query(FleetJournal.lockKeys(runs: [], keys: [key]))
        try db.query("""
            WITH counted AS (SELECT coalesce(max(t.at), 0) + 1 AS n FROM transitions t JOIN runs r ON r.id = t.run_id WHERE r.key = $2),
                 moved AS (UPDATE runs SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq)
            INSERT INTO transitions (run_id, seq, from_phase, to_phase, at) SELECT $1, moved.last_seq, 'queued', 'queued', counted.n FROM moved, counted
            """, [String(run), key])
    }

    static func commit(on db: PGConnection, key: String, run: Int64) throws {
        try db.transaction { try write(on: db, key: key, run: run) }
    }

    static func maxID(on db: PGConnection) throws -> Int64 {
        Int64(try db.query("SELECT coalesce(max(id), 0) FROM transitions").first?[0] ?? "") ?? 0
    }

    /// Every transition committed, as the checks see them.
    static func committed(on db: PGConnection) throws -> [Seen] {
        try db.query("SELECT t.id, r.key, t.run_id, t.seq, t.at FROM transitions t JOIN runs r ON r.id = t.run_id ORDER BY t.id").rows.map {
            Seen(id: Int64($0[0]!)!, key: $0[1]!, run: Int64($0[2]!)!, seq: Int($0[3]!)!, count: Int64($0[4]!)!)
        }
    }

    // MARK: Checks

    struct Seen: Equatable {
        var id: Int64
        var key: String
        var run: Int64
        var seq: Int
        var count: Int64
    }

    /// What is wrong with `delivered` against every committed transition: one missing or twice,
    /// a key's or a run's out of order.
    static func violations(_ delivered: [Seen], all: [Seen]) -> [String] {
        var problems: [String] = []
        let ids = Set(delivered.map(\.id))
        if ids.count != delivered.count { problems.append("\(delivered.count - ids.count) transitions delivered twice") }
        let missing = Set(all.map(\.id)).subtracting(ids)
        if !missing.isEmpty { problems.append("\(missing.count) transitions not delivered") }
        for (key, seen) in Dictionary(grouping: delivered, by: \.key) where seen.map(\.count) != seen.map(\.count).sorted() {
            problems.append("key \(key) out of order: \(seen.map(\.count))")
        }
        for (run, seen) in Dictionary(grouping: delivered, by: \.run) where seen.map(\.seq) != seen.map(\.seq).sorted() {
            problems.append("run \(run) out of order: \(seen.map(\.seq))")
        }
        return problems.sorted()
    }

    // MARK: Readers

    /// The feed's reading, as `FleetFeed` does it (its pages until one is not full).
    struct Feed {
        var position: FeedPosition
        var delivered: [Seen] = []
        var pages = 0

        init(_ start: FeedSnapshot) { position = FeedPosition(seen: start) }

        mutating func read(on db: PGConnection) throws {
            repeat {
                take(try FleetFeed.page(db, &position))
                pages += 1
            } while position.midway
        }

        /// `FleetFeed.catchUpQuery`'s rows, decoded (`CatchUpColumns`).
        mutating func take(_ rows: [CatchUpColumns.Row]) {
            delivered += rows.map { Seen(id: $0.transitionID, key: $0.run.key, run: $0.run.id, seq: $0.transition.seq, count: $0.transition.at.rawValue) }
        }
    }

    /// The reading before schema 9: ids after the last seen (exact only while writers took one lock).
    struct OldFeed {
        var lastID: Int64
        var delivered: [Seen] = []

        init(after lastID: Int64) { self.lastID = lastID }

        mutating func read(on db: PGConnection) throws {
            let rows = try db.query("""
                SELECT t.id, r.key, t.run_id, t.seq, t.at FROM transitions t JOIN runs r ON r.id = t.run_id WHERE t.id > $1 ORDER BY t.id
                """, [String(lastID)]).rows
            for row in rows {
                delivered.append(Seen(id: Int64(row[0]!)!, key: row[1]!, run: Int64(row[2]!)!, seq: Int(row[3]!)!, count: Int64(row[4]!)!))
                lastID = Int64(row[0]!)!
            }
        }
    }

    /// The reader's passes, counted, for writers that hold a transaction open until it has read again.
    final class Passes: @unchecked Sendable {
        private let condition = NSCondition()
        private var count = 0

        func passed() {
            condition.lock()
            count += 1
            condition.broadcast()
            condition.unlock()
        }

        /// Until `more` passes, at most 60 s (a feed that stopped reading leaves no writer waiting for
        /// good): whether they came.
        func wait(for more: Int) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            let until = count + more, deadline = Date().addingTimeInterval(60)
            while count < until && condition.wait(until: deadline) {}
            return count >= until
        }
    }
}

