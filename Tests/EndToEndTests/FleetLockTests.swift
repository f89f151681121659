import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// `locks` and `limits` across real batond hosts on one PostgreSQL database: each lock has a
/// row that every start locks after its key's, holders are the runs loading or retrying, and the
/// line is kept in the runs' rows, so runs holding a common lock never overlap on any hosts, a
/// semaphore never has more holders than its limit fleet-wide, waiters start first in first
/// out whichever host they are on, and a host's death releases what its runs held.
@Suite("End to end: locks across a fleet", .serialized, .offPool)
struct FleetLockTests {
    /// Where the runs leave their marks and gates: each gated run makes `gate-ID` (a FIFO) and
    /// writes `start ID` to the log before it reads it, `end ID` after.
    final class Marks: Sendable {
        let directory: String
        var log: String { directory + "/log" }

        init() throws {
            directory = NSTemporaryDirectory() + "baton-fleet-locks-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        var lines: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// The runs that wrote their start mark, in order.
        var starts: [Int64] { lines.compactMap { $0.hasPrefix("start ") ? Int64($0.dropFirst(6)) : nil } }

        /// Lets run `id` end: opens its FIFO once it has made it and reads it (at most 60 s).
        func release(_ id: Int64) {
            let path = "\(directory)/gate-\(id)"
            // A FIFO opens for writing only once its reader has it: the run has made it and waits.
            var fd: Int32 = -1
            Eventually.until("run \(id) reading its gate \(path) (errno \(errno))", within: 60) {
                fd = open(path, O_WRONLY | O_NONBLOCK)
                return fd >= 0 || (errno != ENXIO && errno != ENOENT)
            }
            guard fd >= 0 else {
                Issue.record("run \(id)'s gate \(path) not opened for writing (errno \(errno))")
                return
            }
            _ = write(fd, "go\n", 3)
            close(fd)
        }

        /// Waits (bounded) until `count` runs have written their start mark.
        func waitForStarts(_ count: Int, within seconds: Double = 60) -> Bool {
            Eventually.until("\(count) runs wrote their start mark: \(lines)", within: seconds) { starts.count >= count }
        }

        /// The most runs of `runs` between their start and end marks at once.
        func mostAtOnce(of runs: Set<Int64>) -> Int {
            var inside = 0, most = 0
            for line in lines {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let id = Int64(parts[1]), runs.contains(id) else { continue }
                inside += parts[0] == "start" ? 1 : -1
                most = max(most, inside)
            }
            return most
        }
    }

    /// migrate holds db; backup holds db and heavy-io; scan holds heavy-io (2 at once); quick
    /// holds db and ends at once. Every action is keyed by `n`, so that only its locks make its
    /// runs wait for each other.
    static func actions(_ marks: Marks) -> String {
        let gated = #"f=\"$DIR/gate-$BATON_RUN_ID\"; mkfifo \"$f\"; echo start $BATON_RUN_ID >> \"$DIR/log\"; cat \"$f\" > /dev/null; echo end $BATON_RUN_ID >> \"$DIR/log\""#
        let quick = #"echo start $BATON_RUN_ID >> \"$DIR/log\"; echo end $BATON_RUN_ID >> \"$DIR/log\""#
        func action(_ name: String, _ script: String, _ locks: String) -> String {
            """
            \(name): { exec: ["sh", "-c", "\(script)"], env: { DIR: "\(marks.directory)" }, locks: \(locks),
                       params: { n: { default: "0" } }, keyParams: ["n"], policies: ["queue", "join"] },
            """
        }
        return action("migrate", gated, #"["db"]"#) + action("backup", gated, #"["db", "heavy-io"]"#)
            + action("scan", gated, #"["heavy-io"]"#) + action("quick", quick, #"["db"]"#)
    }

    static func fleet(_ count: Int, _ marks: Marks, lease: String = "15s", conninfo: String) throws -> [Daemon] {
        try (1...count).map { index in
            let host = try Daemon(config: """
                { postgres: "\(conninfo)", host: "web-\(index)", lease: "\(lease)", maxConcurrentRuns: 8, limits: { "heavy-io": 2 },
                  actions: { \(actions(marks)) } }
                """)
            try host.waitForLog("joined the fleet")
            return host
        }
    }

    static func trigger(_ host: Daemon, _ action: String, _ n: Int = 0) throws -> Response {
        try Client(path: host.socket).call(Request(op: .trigger, action: action, params: ["n": String(n)], detach: true))
    }

    @Test("two actions sharing lock db on different hosts never overlap: the second waits queued, every host says for what, and it starts on its host once the first has ended")
    func neverOverlap() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(3, marks, conninfo: conninfo)
        let first = try #require(try Self.trigger(hosts[0], "migrate").run)
        #expect(first.phase == .loading && first.waiting == nil, "\(first)")
        let second = try #require(try Self.trigger(hosts[1], "backup").run)
        let told = "waiting for lock db, held by migrate run \(first.id)"
        #expect(second.phase == .queued && second.waiting?.text == told, "\(second)")
        // Every host's status and show say it, once its feed has read the line (a bounded poll).
        for host in hosts {
            try Eventually.until("\(host.socket)'s status says run \(second.id) \(told): \(host.stderr.suffix(2_000))") {
                try host.baton("status").stdout.contains("queued (run \(second.id)) \(told)")
            }
            try Eventually.value("\(host.socket)'s show \(second.id) says \(told)", { try host.baton("show", String(second.id)).stdout }) { $0.contains("  \(told)\n") }
        }
        try #require(marks.waitForStarts(1) && marks.starts == [first.id])
        marks.release(first.id)
        #expect(try FleetTests.wait(hosts[2], run: first.id)?.phase == .success)
        // web-2 learns from the feed that db is free and starts its run.
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        marks.release(second.id)
        let ended = try #require(try FleetTests.wait(hosts[0], run: second.id))
        #expect(ended.phase == .success && ended.host == "web-2", "\(ended)")
        #expect(marks.lines == ["start \(first.id)", "end \(first.id)", "start \(second.id)", "end \(second.id)"], "the runs overlapped: \(marks.lines)")
        let story = try hosts[2].baton("show", String(second.id)).stdout
        #expect(story.contains("queued → loading  (attempt 1; took locks db, heavy-io)"), "\(story)")
    }

    @Test("a semaphore of 2 across three hosts never has more than 2 holders, and its line is first in first out across the hosts: an older waiter keeps its place in every lock it wants")
    func semaphoreInOrder() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(3, marks, conninfo: conninfo)
        // Six scans on their own keys, one host after another: two take heavy-io, four wait in
        // the order they came, whichever host they are on.
        var order: [Int64] = []
        for index in 0..<6 {
            let run = try #require(try Self.trigger(hosts[index % 3], "scan", index).run)
            order.append(run.id)
            if index < 2 {
                #expect(run.phase == .loading, "\(run)")
            } else {
                #expect(run.phase == .queued && run.waiting?.text == "waiting for lock heavy-io (2 at once), held by scan run \(order[0]), scan run \(order[1])",
                        "\(run)")
            }
        }
        // backup wants db (free) and heavy-io (full): it takes neither and waits. migrate wants
        // only db, free, but backup came first and keeps its place there: migrate waits behind it.
        let backup = try #require(try Self.trigger(hosts[0], "backup").run)
        #expect(backup.phase == .queued && backup.waiting?.lock == "heavy-io", "\(backup)")
        let migrate = try #require(try Self.trigger(hosts[1], "migrate").run)
        #expect(migrate.phase == .queued && migrate.waiting?.text == "waiting for lock db, behind backup run \(backup.id)", "\(migrate)")
        order += [backup.id, migrate.id]

        // Let the runs end one at a time, oldest start first; after each, the head of the line
        // starts (migrate only once backup has ended: backup holds db from its start).
        #expect(marks.waitForStarts(2))
        let startsAfter = [3, 4, 5, 6, 7, 7, 8, 8]
        for (index, expected) in startsAfter.enumerated() {
            let started = marks.starts
            guard started.count > index else {
                Issue.record("run \(index + 1) of the line never started: \(marks.lines)")
                break
            }
            marks.release(started[index])
            #expect(marks.waitForStarts(expected), "after releasing \(index + 1): \(marks.lines)")
        }
        let db = try PGConnection(conninfo)
        #expect(try FleetHookTests.settled(db))
        // The first two start together (the semaphore has room for both, on two hosts): which of
        // their processes marks its start first is the kernel's to say. Every later one starts
        // alone, when one ends: those are the line, in its order.
        #expect(Set(marks.starts.prefix(2)) == Set(order.prefix(2)) && Array(marks.starts.dropFirst(2)) == Array(order.dropFirst(2)),
                "the line was not first in first out: \(marks.starts) for \(order)")
        let heavy = Set(order.dropLast())
        #expect(marks.mostAtOnce(of: heavy) == 2, "heavy-io: \(marks.lines)")
        #expect(marks.mostAtOnce(of: [backup.id, migrate.id]) == 1, "db: \(marks.lines)")
        // And by PostgreSQL's own times of the runs' starts and ends: at no start more than two held heavy-io.
        let spans = try db.query("SELECT started_at, ended_at FROM runs WHERE action <> 'migrate'").rows.map { (Int64($0[0] ?? "") ?? 0, Int64($0[1] ?? "") ?? 0) }
        #expect(spans.count == 7 && spans.map { start in spans.count { $0.0 <= start.0 && start.0 < $0.1 } }.max() == 2, "\(spans)")
        let hostsRan = Set(try db.query("SELECT host FROM runs WHERE phase = 'success'").rows.compactMap { $0[0] })
        #expect(hostsRan == ["web-1", "web-2", "web-3"])
    }

    @Test("a storm over three hosts: 45 runs on their own keys sharing lock db, all at once: each runs once, none overlapping another, counted in PostgreSQL")
    func storm() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(3, marks, conninfo: conninfo)
        let answers = Collected<Response>()
        inParallel(45) { index in
            if let answer = try? Self.trigger(hosts[index % 3], "quick", index) { answers.append(answer) }
        }
        #expect(answers.all.count == 45 && answers.all.allSatisfy { $0.decision == .created }, "\(answers.all.map { $0.error?.message ?? "" })")
        let db = try PGConnection(conninfo)
        #expect(try FleetHookTests.settled(db))
        let runs = try db.query("SELECT id, host, phase, started_at, ended_at FROM runs ORDER BY started_at").rows
        #expect(runs.count == 45 && runs.allSatisfy { $0[2] == "success" }, "\(runs)")
        #expect(Set(runs.compactMap { $0[1] }).count == 3, "every host ran some")
        // On the runs' own clocks (one machine): each started after the one before it ended.
        let spans = runs.map { (Int64($0[3] ?? "") ?? 0, Int64($0[4] ?? "") ?? 0) }
        for (before, after) in zip(spans, spans.dropFirst()) { #expect(after.0 > before.1, "overlap: \(before) and \(after)") }
        // Exactly one start each, each recording the lock it took.
        let loadings = try db.query("SELECT detail FROM transitions WHERE to_phase = 'loading'").rows
        #expect(loadings.count == 45 && loadings.allSatisfy { ($0[0] ?? "").contains(#""locks":["db"]"#) }, "\(loadings.prefix(3))")
        #expect(marks.mostAtOnce(of: Set(runs.compactMap { $0[0].flatMap { Int64($0) } })) == 1, "\(marks.lines)")
        #expect(marks.lines.count == 90)
    }

    @Test("kill -9 of a host holding lock db: the survivor's reaper ends its run host_lost, which releases db, and the waiter starts there")
    func hostKilledHoldingALock() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(2, marks, lease: "2s", conninfo: conninfo)
        let holder = try #require(try Self.trigger(hosts[0], "migrate").run)
        #expect(holder.phase == .loading)
        #expect(marks.waitForStarts(1))
        let waiter = try #require(try Self.trigger(hosts[1], "backup").run)
        #expect(waiter.waiting?.text == "waiting for lock db, held by migrate run \(holder.id)", "\(waiter)")
        hosts[0].crash()
        // The survivor reaps web-1 once its lease has run out: the host_lost end releases db.
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        marks.release(waiter.id)
        let ran = try #require(try FleetTests.wait(hosts[1], run: waiter.id))
        #expect(ran.phase == .success && ran.host == "web-2", "\(ran)")
        let lost = try #require(try FleetTests.wait(hosts[1], run: holder.id))
        #expect(lost.phase == .failure && lost.reason == "host_lost", "\(lost)")
        let started = try #require(ran.startedAt), ended = try #require(lost.endedAt)
        #expect(started > ended, "the waiter started before the holder's end")
        #expect(marks.lines == ["start \(holder.id)", "start \(waiter.id)", "end \(waiter.id)"], "\(marks.lines)")
    }

    @Test("a cancel on one host of a run in line on another ends it at once, queued, and gives up its place: the run behind it takes db after the holder")
    func cancelInLine() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(3, marks, conninfo: conninfo)
        let holder = try #require(try Self.trigger(hosts[0], "migrate").run)
        let cancelled = try #require(try Self.trigger(hosts[1], "backup").run)
        let behind = try #require(try Self.trigger(hosts[2], "migrate", 1).run)
        #expect(cancelled.waiting?.lock == "db" && behind.waiting?.lock == "db", "\(cancelled) \(behind)")
        let cancel = try hosts[0].baton("cancel", String(cancelled.id))
        #expect(cancel.code == 0, "\(cancel.stderr)")
        let ended = try #require(try FleetTests.wait(hosts[2], run: cancelled.id))
        #expect(ended.phase == .cancelled && ended.startedAt == nil, "\(ended)")
        try #require(marks.waitForStarts(1))
        marks.release(holder.id)
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        marks.release(behind.id)
        #expect(try FleetTests.wait(hosts[0], run: behind.id)?.phase == .success)
        #expect(marks.lines == ["start \(holder.id)", "end \(holder.id)", "start \(behind.id)", "end \(behind.id)"], "\(marks.lines)")
    }

    @Test("a lost notification: a holder's end committed without NOTIFY still frees the lock; the waiter's host starts it from its catch-up read (once a second)")
    func lostNotification() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(1, marks, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        // A holder of db on a host that renews a long lease (the reaper leaves it alone) and tells nobody anything.
        try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms) VALUES ('ghost/1/x', 'ghost', 1, 3600000)")
        let holder = try #require(try db.query("""
            INSERT INTO runs (action, key, phase, policy, params, queued_at, started_at, host, incarnation, locks)
            VALUES ('migrate', 'migrate n=ghost', 'loading', 'queue', '{}', 1, 1, 'ghost', 'ghost/1/x', '{db}') RETURNING id
            """).first?[0].flatMap { Int64($0) })
        let waiter = try #require(try Self.trigger(hosts[0], "backup").run)
        #expect(waiter.phase == .queued && waiter.waiting?.text == "waiting for lock db, held by migrate run \(holder)", "\(waiter)")
        // Once the host's feed has read the line (every notification so far consumed)...
        try Eventually.until("web-1's status says run \(waiter.id) waits for lock db") { try hosts[0].baton("status").stdout.contains("queued (run \(waiter.id)) waiting for lock db") }
        // ...the end, as a host that lost its notification would leave it: committed, nobody told.
        try db.query("UPDATE runs SET phase = 'success', ended_at = 2 WHERE id = $1", [String(holder)])
        try #require(marks.waitForStarts(1, within: 30), "the waiter never started: \(hosts[0].stderr.suffix(2_000))")
        marks.release(waiter.id)
        #expect(try FleetTests.wait(hosts[0], run: waiter.id)?.phase == .success)
    }

    @Test("fleet migration 12 gives locks their table and runs their locks and place in line, and leaves older runs holding none")
    func migration() throws {
        let db = try PGConnection(try Postgres.server().database())
        #expect(try FleetSchema.migrate(db, through: 11) == 11)
        try db.query("""
            INSERT INTO runs (id, action, key, phase, policy, params, queued_at, host, incarnation)
            VALUES (1, 'migrate', 'migrate', 'loading', 'reject', '{}', 1, 'web-1', 'web-1/1/old')
            """)
        #expect(try FleetSchema.migrate(db, through: 12) == 12)
        #expect(try db.query("SELECT locks, lock_wait FROM runs").rows == [[nil, nil]])
        #expect(try db.query("SELECT count(*) FROM locks").first?[0] == "0")
        #expect(try db.query("SELECT nextval('lock_waits')").first?[0] == "1")
        // A batond that knows only version 11 (which refused locks in a fleet) refuses this database.
        #expect(throws: PGError.self) { try FleetSchema.migrate(db, known: 11) }
        do { _ = try FleetSchema.migrate(db, known: 11) } catch {
            #expect("\(error)".contains("fleet schema version 12, newer than this batond knows (11)"), "\(error)")
        }
    }
}
