import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// A run's chain of commits on its host (issue 25): the next run starts in the transaction that
/// writes the end of the run before it, as one machine starts it in the end's store item, and a
/// run's process group is no commit of its own. Each is read exactly in PostgreSQL: the `xid`
/// of the transitions, and the `xmin` of a run's row.
@Suite("End to end: a run's chain of commits in a fleet", .serialized, .offPool)
struct FleetChainTests {
    typealias Marks = FleetLockTests.Marks

    /// gated waits for its gate (`FleetLockTests.Marks`), after writing its shell's pid (its
    /// process group) to `pid-ID`; held also takes lock db; quick ends at once; failing fails,
    /// its failure hook `quick`. Each keyed by `n`.
    static func actions(_ marks: Marks) -> String {
        let gated = #"echo $$ > \"$DIR/pid-$BATON_RUN_ID\"; f=\"$DIR/gate-$BATON_RUN_ID\"; mkfifo \"$f\"; echo start $BATON_RUN_ID >> \"$DIR/log\"; cat \"$f\" > /dev/null; echo end $BATON_RUN_ID >> \"$DIR/log\""#
        func action(_ name: String, _ script: String, _ extra: String = "") -> String {
            """
            \(name): { exec: ["sh", "-c", "\(script)"], env: { DIR: "\(marks.directory)" }, params: { n: { default: "0" } },
                       keyParams: ["n"], policies: ["reject", "queue"] \(extra) },
            """
        }
        return action("gated", gated) + action("held", gated, #", locks: ["db"]"#) + action("quick", "true")
            + action("failing", "exit 3", #", on: { failure: "quick" }"#)
    }

    static func host(_ marks: Marks, conninfo: String, name: String = "web-1", slots: Int = 8) throws -> Daemon {
        let host = try Daemon(config: """
            { postgres: "\(conninfo)", host: "\(name)", lease: "15s", maxConcurrentRuns: \(slots), actions: { \(actions(marks)) } }
            """)
        try host.waitForLog("joined the fleet")
        return host
    }

    static func trigger(_ host: Daemon, _ action: String, _ n: Int = 0, policy: Policy? = nil) throws -> RunSnapshot {
        let answer = try Client(path: host.socket).call(Request(op: .trigger, action: action, params: ["n": String(n)], policy: policy, detach: true))
        return try #require(answer.run, "\(answer)")
    }

    /// The transaction (`xid`) that wrote the run's transition to `phase`, once it is committed (bounded wait).
    static func xid(_ db: PGConnection, run: Int64, to phase: Phase) throws -> String? {
        try Eventually.value("run \(run)'s transition to \(phase.rawValue) committed", {
            try db.query("SELECT xid::text FROM transitions WHERE run_id = $1 AND to_phase = $2", [String(run), phase.rawValue]).first?[0] ?? nil
        }) { $0 != nil }
    }

    /// Every transition with the transaction that wrote it, for a failure's message.
    static func story(_ db: PGConnection) -> String {
        let rows = (try? db.query("SELECT run_id, seq, to_phase, xid::text FROM transitions ORDER BY id").rows) ?? []
        return rows.map { $0.map { $0 ?? "-" }.joined(separator: " ") }.joined(separator: "; ")
    }

    @Test("a follow-up starts in the transaction that writes its holder's end, not after the feed hears of it")
    func followUpInTheEnd() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let host = try Self.host(marks, conninfo: conninfo)
        let first = try Self.trigger(host, "gated")
        let next = try Self.trigger(host, "gated", policy: .queue)
        #expect(first.phase == .loading && next.phase == .queued, "\(first) \(next)")
        try #require(marks.waitForStarts(1))
        marks.release(first.id)
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        let db = try PGConnection(conninfo)
        let ended = try #require(try Self.xid(db, run: first.id, to: .success))
        #expect(try Self.xid(db, run: next.id, to: .loading) == ended, "the follow-up started in a transaction of its own: \(Self.story(db))")
        marks.release(next.id)
        #expect(try FleetHookTests.settled(db))
    }

    @Test("a run waiting for a start slot, on another key, starts in the transaction that ends the run holding the slot")
    func slotInTheEnd() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let host = try Self.host(marks, conninfo: conninfo, slots: 1)
        let first = try Self.trigger(host, "gated", 1)
        let waiting = try Self.trigger(host, "gated", 2)
        #expect(first.phase == .loading && waiting.phase == .queued, "\(first) \(waiting)")
        try #require(marks.waitForStarts(1))
        marks.release(first.id)
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        let db = try PGConnection(conninfo)
        let ended = try #require(try Self.xid(db, run: first.id, to: .success))
        #expect(try Self.xid(db, run: waiting.id, to: .loading) == ended, "the run waiting for the slot started in a transaction of its own: \(Self.story(db))\n\(host.stderr.suffix(3_000))")
        marks.release(waiting.id)
        #expect(try FleetHookTests.settled(db))
    }

    @Test("a run in a lock's line takes the lock, and a hook run starts, in the transaction of the end that freed them")
    func lockAndHookInTheEnd() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let host = try Self.host(marks, conninfo: conninfo)
        let holder = try Self.trigger(host, "held", 1)
        let waiter = try Self.trigger(host, "held", 2)
        #expect(holder.phase == .loading && waiter.phase == .queued && waiter.waiting?.lock == "db", "\(holder) \(waiter)")
        try #require(marks.waitForStarts(1))
        marks.release(holder.id)
        try #require(marks.waitForStarts(2), "\(marks.lines)")
        let db = try PGConnection(conninfo)
        let ended = try #require(try Self.xid(db, run: holder.id, to: .success))
        #expect(try Self.xid(db, run: waiter.id, to: .loading) == ended, "the waiter took db in a transaction of its own: \(Self.story(db))")
        marks.release(waiter.id)

        // A failure's hook run is made and started by the end's transaction.
        let failed = try Self.trigger(host, "failing", 3)
        #expect(try FleetHookTests.settled(db))
        let hook = try #require(try FleetHookTests.hookRuns(db).first { $0[2] == String(failed.id) }?[0].flatMap { Int64($0) })
        let end = try #require(try Self.xid(db, run: failed.id, to: .failure))
        #expect(try Self.xid(db, run: hook, to: .queued) == end)
        #expect(try Self.xid(db, run: hook, to: .loading) == end, "the hook run started in a transaction of its own: \(Self.story(db))")
    }

    @Test("a run's process group is no commit of its own: it rides with the next write of its host, and a cancel from another host still stops the run's processes")
    func processGroupRides() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let one = try Self.host(marks, conninfo: conninfo)
        let two = try Self.host(marks, conninfo: conninfo, name: "web-2")
        let db = try PGConnection(conninfo)

        // The process group of a run rides with the end of another run of its host.
        let riding = try Self.trigger(one, "gated", 1)
        try #require(marks.waitForStarts(1))
        let leader = try #require(Int32((try? String(contentsOfFile: "\(marks.directory)/pid-\(riding.id)", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""))
        let quick = try Self.trigger(one, "quick", 2)
        #expect(try FleetTests.wait(one, run: quick.id)?.phase == .success)
        let ended = try #require(try Self.xid(db, run: quick.id, to: .success))
        let row = try #require(try db.query("SELECT pgid, xmin::text FROM runs WHERE id = $1", [String(riding.id)]).first)
        // The action runs under its shim, the group's leader (issue 41): the group is the shim's.
        #expect(row[0] == String(getpgid(leader)), "the run's process group was not written with the next write: \(row)")
        #expect(row[1].flatMap { UInt64($0) } == UInt64(ended).map { $0 % (1 << 32) }, "the process group was a commit of its own: \(row), end \(ended)")
        marks.release(riding.id)
        // Its end is this host's last write before the next run starts (else the next run's
        // process group could ride with it).
        #expect(try FleetTests.wait(one, run: riding.id)?.phase == .success)
        try #require(try Self.xid(db, run: riding.id, to: .success) != nil)

        // A run whose process group nobody has written: a cancel from web-2 reaches its processes.
        let cancelled = try Self.trigger(one, "gated", 3)
        try #require(marks.waitForStarts(2))
        let pid = try #require(Int32((try? String(contentsOfFile: "\(marks.directory)/pid-\(cancelled.id)", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""))
        #expect(try db.query("SELECT pgid FROM runs WHERE id = $1", [String(cancelled.id)]).first?[0] == nil)
        let listening = try PGConnection(conninfo)
        try listening.execute("LISTEN baton")
        let answer = try Client(path: two.socket).call(Request(op: .cancel, run: cancelled.id))
        #expect(answer.error == nil, "\(answer)")
        // The mark is announced (the feeds read the stops when they hear it, else once a second).
        var heard: [(channel: String, payload: String)] = []
        try Eventually.until("the stop announced on channel baton: \(heard)") {
            heard += try listening.notifications()
            return heard.contains { $0.channel == "baton" && $0.payload == "stop" }
        }
        let gone = Eventually.until("the cancelled run's process \(pid) gone") { kill(pid, 0) != 0 && errno == ESRCH }
        try Eventually.until("run \(cancelled.id) cancelled") {
            try db.query("SELECT phase FROM runs WHERE id = $1", [String(cancelled.id)]).first?[0] == "cancelled"
        }
        #expect(!marks.lines.contains("end \(cancelled.id)"), "\(marks.lines)")
        if !gone { marks.release(cancelled.id) }
        #expect(try FleetHookTests.settled(db))
    }

    @Test("a run that a start from the feed puts in a lock's line gives its start slot back: twice on a host of two slots, and the host still starts two runs at once")
    func lineGivesSlotBack() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let one = try Self.host(marks, conninfo: conninfo, slots: 2)
        let two = try Self.host(marks, conninfo: conninfo, name: "web-2")
        var started = 0
        for round in 0..<2 {
            // web-2 holds key k and db; web-1's follow-up of k, and web-2's run of key m in db's line.
            let (k, m) = (10 + round, 20 + round)
            let holder = try Self.trigger(two, "held", k)
            let followUp = try Self.trigger(one, "held", k, policy: .queue)
            let inLine = try Self.trigger(two, "held", m)
            #expect(holder.phase == .loading && followUp.phase == .queued && inLine.phase == .queued, "\(holder) \(followUp) \(inLine)")
            try #require(marks.waitForStarts(started + 1))
            // Its end starts web-2's run in line (it takes db); web-1's feed then finds its
            // follow-up's key free and its start puts it in db's line, behind that run.
            marks.release(holder.id)
            try #require(marks.waitForStarts(started + 2), "\(marks.lines)")
            #expect(marks.starts.last == inLine.id, "\(marks.lines)")
            let db = try PGConnection(conninfo)
            try Eventually.until("the follow-up came into db's line") {
                try db.query("SELECT lock_wait IS NOT NULL FROM runs WHERE id = $1", [String(followUp.id)]).first?[0] == "t"
            }
            marks.release(inLine.id)
            try #require(marks.waitForStarts(started + 3), "\(marks.lines)")
            marks.release(followUp.id)
            #expect(try FleetHookTests.settled(db))
            started += 3
        }
        // Both of web-1's slots are free: two runs start at once (both held by their gates, so both
        // starting means two slots). Not checked at the triggers' answers: the history says the
        // follow-up ended (`settled`) a moment before web-1's loop has taken the writer's word for
        // it and given its slot back, and a trigger in between is queued and starts then (a flake
        // under load in session 26); a slot kept for good leaves the second queued and this fails.
        let first = try Self.trigger(one, "gated", 30)
        let second = try Self.trigger(one, "gated", 31)
        guard marks.waitForStarts(started + 2) else { return } // web-1 kept a start slot (the wait names the marks)
        marks.release(first.id)
        marks.release(second.id)
        #expect(try FleetHookTests.settled(try PGConnection(conninfo)))
    }
}
