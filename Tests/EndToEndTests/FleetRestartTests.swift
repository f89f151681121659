import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 41, part 3: a fleet host stopped, restarted in place or killed hands its runs to their
/// shims; the batond that comes back under its name within the lease takes them back and records
/// their true ends (fenced), while another host of the fleet never gets their keys. After the
/// lease ran out, another host took them over: the host that comes back stops their processes and
/// writes nothing over the taker's rows.
@Suite("End to end: a fleet host's restart keeps its runs", .serialized, .offPool)
struct FleetRestartTests {
    enum How: String, CaseIterable, CustomTestStringConvertible {
        case kill = "SIGKILL", stop = "SIGTERM", restart = "SIGUSR2"
        var testDescription: String { rawValue }
    }

    /// The run writes `before`, marks that it started, waits for GO, writes `after` and exits 7.
    static func config(_ conninfo: String, host: String, lease: String, scratch: String, slots: Int? = nil, grace: String = "1s") -> String {
        let script = #"echo before; touch \"$MARK\"; while [ ! -e \"$GO\" ]; do sleep 0.02; done; echo after; exit 7"#
        return """
            { postgres: "\(conninfo)", host: "\(host)", lease: "\(lease)", requireUser: false, shutdownGrace: "\(grace)",\(slots.map { " maxConcurrentRuns: \($0)," } ?? "")
              actions: { waiter: { exec: ["sh", "-c", "\(script)"], env: { GO: "\(scratch)/go", MARK: "\(scratch)/started" }, policy: "reject" },
                         mortal: { exec: ["sleep", "300"], env: { GO: "\(scratch)/go" }, survivesRestart: false, killGrace: "100ms" },
                         flaky: { exec: ["false"], retry: { attempts: 1, backoff: "1h" } },
                         quick: { exec: ["false"], retry: { attempts: 1, backoff: "2s" } },
                         tries: { exec: ["sh", "-c", "echo attempt >> \(scratch)/tries; exit 1"], retry: { attempts: 1, backoff: "2s" } },
                         again: { exec: ["sh", "-c", "echo start >> \(scratch)/again; sleep 30"], onInterrupt: "restart", survivesRestart: false } } }
            """
    }

    /// Expects run `id`'s transitions to be `phases`, in order; with `marker`, the action's marker file
    /// in `scratch` to read `lines` (each start or attempt writes one line).
    static func expect(_ id: Int64, phases: [String], on db: PGConnection, marker: (scratch: String, file: String, lines: String)? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let seen = try db.query("SELECT to_phase FROM transitions WHERE run_id = $1 ORDER BY seq", [String(id)]).rows.map { $0[0] }
        #expect(seen == phases, "\(seen)", sourceLocation: sourceLocation)
        guard let marker else { return }
        let written = (try? String(contentsOfFile: marker.scratch + "/" + marker.file, encoding: .utf8)) ?? ""
        #expect(written == marker.lines, "\(written)", sourceLocation: sourceLocation)
    }

    /// A directory of the test's own for the actions' marker files (the caller removes it).
    static func scratch() throws -> String {
        let scratch = NSTemporaryDirectory() + "baton-fleet-restart-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        return scratch
    }

    /// A host of the fleet, once it has joined.
    static func host(_ conninfo: String, _ name: String, lease: String, scratch: String, slots: Int? = nil) throws -> Daemon {
        let host = try Daemon(config: config(conninfo, host: name, lease: lease, scratch: scratch, slots: slots))
        try host.waitForLog("joined the fleet")
        return host
    }

    /// Waits for the file the run makes when it starts.
    static func waitForStart(_ scratch: String, of host: Daemon) {
        Eventually.until("the run started (made \(scratch)/started): \(host.stderr.suffix(2_000))") { access(scratch + "/started", F_OK) == 0 }
    }

    @Test("a fleet host killed, stopped or restarted in place and back within its lease takes its run back: it ends failure exit 7 with its output, once; the other host never gets its key",
          arguments: How.allCases)
    func withinLease(_ how: How) throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "waiter").run?.id)
        let mortal = try #require(try FleetTests.trigger(a, "mortal").run?.id)
        Self.waitForStart(scratch, of: a)
        // Its leader (the shim) and first line are in the fleet's rows before the signal: a crash
        // before them could not be adopted (nothing would say which process is the run's).
        let db = try PGConnection(conninfo)
        try Eventually.until("the run's process group and output written") {
            try db.query("""
                SELECT 1 FROM runs r JOIN output_totals o ON o.run_id = r.id WHERE r.id = $1 AND r.pgid IS NOT NULL AND o.total >= 7
                """, [String(id)]).first != nil
        }
        // The guard of this start, which waits for the lease's deadline once batond is gone.
        let guards = FleetGuardTests.guards(of: a.process.processIdentifier)
        #expect(!guards.isEmpty)
        var back = a
        switch how {
        case .kill:
            a.crash()
        case .stop:
            a.signal(SIGTERM)
            #expect(a.waitForExit(within: 20) == 0, "\(a.stderr)")
        case .restart:
            a.signal(SIGUSR2)
        }
        // With no batond of web-1 running (or one restarting), the key is still held.
        #expect(try FleetTests.trigger(b, "waiter").error?.code == .busy)
        if how != .restart { back = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "20s", scratch: scratch), reusing: a) }
        try back.waitForLog("joined the fleet", count: how == .restart ? 2 : 1)
        defer { back.stop() }
        #expect(back.stderr.contains("took back 1 runs"), "\(back.stderr)")
        // The previous start's guard is gone once this start joined: else it would kill the run taken back at its deadline.
        #expect(guards.allSatisfy { !FleetGuardTests.isLive($0) }, "the previous start's guard lives on: \(guards)\n\(back.stderr)")
        #expect(try FleetTests.trigger(b, "waiter").error?.code == .busy, "the key of a run taken back is still held")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .failure && ended.exitCode == 7 && ended.reason == "exit", "\(ended)\n\(back.stderr)")
        #expect(ended.host == "web-1")
        let logs = try b.baton("logs", String(id))
        #expect(logs.stdout == "before\nafter\n", "\(logs)")
        // Recorded once, a legal path; and no other run of the key ever started.
        let path = try db.query("SELECT seq, from_phase, to_phase FROM transitions WHERE run_id = $1 ORDER BY seq", [String(id)]).rows
            .map { $0.map { $0 ?? "-" }.joined(separator: " ") }
        #expect(path == ["1 - queued", "2 queued loading", "3 loading failure"], "\(path)")
        let runs = try db.query("SELECT id FROM runs ORDER BY id").rows.compactMap { $0[0] }
        #expect(runs == [String(id), String(mortal)], "\(runs)")
        // `survivesRestart: false` keeps today's behaviour: cancelled at a stop or a restart,
        // killed and ended `interrupted` by the next start after a crash.
        let opted = try #require(try FleetTests.wait(b, run: mortal))
        let expected = how == .kill ? "failure interrupted" : "cancelled shutdown"
        #expect("\(opted.phase.rawValue) \(opted.reason ?? "-")" == expected, "\(opted)")
    }

    @Test("a fleet host killed and back within its lease with another connection string (a password rotated): the runs of its previous start, tagged otherwise, are killed at once by their recorded tag, its guard ended, and none is taken back")
    func tagChanged() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let id = try #require(try FleetTests.trigger(a, "waiter").run?.id)
        let mortal = try #require(try FleetTests.trigger(a, "mortal").run?.id)
        Self.waitForStart(scratch, of: a)
        let db = try PGConnection(conninfo)
        try Eventually.until("both runs' process groups recorded") {
            try db.query("SELECT count(*) FROM runs WHERE pgid IS NOT NULL").first?[0] == "2"
        }
        let guards = FleetGuardTests.guards(of: a.process.processIdentifier)
        #expect(!guards.isEmpty)
        a.crash()
        #expect(!Self.tagged(run: mortal, scratch: scratch).isEmpty)
        let back = try Daemon(config: Self.config(conninfo + " connect_timeout=30", host: "web-1", lease: "20s", scratch: scratch), reusing: a)
        try back.waitForLog("joined the fleet")
        defer { back.stop() }
        // Once joined, long before the old guard's deadline (15 s): nothing of either run lives.
        #expect(Self.tagged(run: mortal, scratch: scratch).isEmpty, "\(back.stderr)")
        #expect(Self.tagged(run: id, scratch: scratch).isEmpty, "\(back.stderr)")
        #expect(guards.allSatisfy { !FleetGuardTests.isLive($0) }, "the previous start's guard lives on: \(guards)")
        #expect(!back.stderr.contains("took back"), "\(back.stderr)")
        for run in [id, mortal] {
            let ended = try #require(try FleetTests.wait(back, run: run))
            #expect("\(ended.phase.rawValue) \(ended.reason ?? "-")" == "failure interrupted", "\(ended)")
        }
    }

    @Test("a fleet host stopped while a run waits to retry: the run is cancelled (shutdown) at the stop, not left to be ended host_lost")
    func retryingAtStop() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "2s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "flaky").run?.id)
        let db = try PGConnection(conninfo)
        try Eventually.until("run \(id) retrying") {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(id)]).first != nil
        }
        a.signal(SIGTERM)
        #expect(a.waitForExit(within: 20) == 0, "\(a.stderr)")
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect("\(ended.phase.rawValue) \(ended.reason ?? "-")" == "cancelled shutdown", "\(ended)\n\(a.stderr)")
    }

    @Test("a fleet host killed while a run waits to retry, and back in place: the run waits out its backoff there and tries again, as one machine's restart resumes it, not ended interrupted (audit D2 a)")
    func retryingAfterCrash() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let id = try #require(try FleetTests.trigger(a, "quick").run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("run \(id) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(id)]).first != nil
        }) else { return }
        a.crash()
        let back = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "20s", scratch: scratch), reusing: a)
        try back.waitForLog("joined the fleet")
        defer { back.stop() }
        let ended = try #require(try FleetTests.wait(back, run: id))
        #expect(ended.phase == .failure && ended.reason != "interrupted" && ended.attempts == 2, "\(ended)\n\(back.stderr.suffix(2_000))")
        try Self.expect(id, phases: ["queued", "loading", "retrying", "loading", "failure"], on: db)
        try Self.expectBackoffWaited(id, on: db)
    }

    @Test("a fleet host killed while a run waits to retry, and not back: the host that takes its runs over waits out the backoff and tries again there, not ended host_lost (audit D2 a)")
    func retryingReaped() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "2s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "quick").run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("run \(id) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(id)]).first != nil
        }) else { return }
        a.crash()
        // web-2 reaps web-1 once its lease has run out as the database counts it.
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .failure && ended.reason != "host_lost" && ended.attempts == 2 && ended.host == "web-2",
                "\(ended)\n\(b.stderr.suffix(2_000))")
        try Self.expect(id, phases: ["queued", "loading", "retrying", "loading", "failure"], on: db)
        try Self.expectBackoffWaited(id, on: db)
    }

    @Test("a fleet host killed and back after its lease ran out: the other host took its run over; the host kills the run's processes and writes nothing over the taker's rows")
    func afterLease() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "2s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "waiter").run?.id)
        Self.waitForStart(scratch, of: a)
        // Its guard killed too (it waits for the lease's deadline), so that the run's processes
        // outlive the lease: the host that comes back must stop them itself.
        let batond = a.process.processIdentifier
        let guards = FleetGuardTests.guards(of: batond)
        a.crash()
        #expect(!guards.isEmpty)
        for guardian in guards { try FleetGuardTests.signalAndWait(guardian) }
        // web-2 reaps web-1 once its lease has run out as the database counts it.
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .failure && ended.reason == "host_lost", "\(ended)")
        #expect(!Self.tagged(run: id, scratch: scratch).isEmpty, "the run's processes did not outlive the lease: the test proves nothing")
        let back = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "2s", scratch: scratch), reusing: a)
        try back.waitForLog("joined the fleet")
        defer { back.stop() }
        #expect(!back.stderr.contains("took back"), "\(back.stderr)")
        // No process of the run is left: nothing tagged with web-1's instance and the run lives.
        let tagged = Self.tagged(run: id, scratch: scratch)
        #expect(tagged.isEmpty, "processes of run \(id) still live: \(tagged)")
        // The taker's end stands, the last transition written.
        let db = try PGConnection(conninfo)
        let row = try db.query("SELECT phase, reason, coalesce(exit_code::text, '-'), last_seq FROM runs WHERE id = $1", [String(id)]).first
        #expect(row == ["failure", "host_lost", "-", "3"], "\(String(describing: row))")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        #expect(try FleetTests.trigger(b, "waiter").run != nil)
    }

    @Test("a cancel asked on another host while the host is down is carried out by the start that takes the run back")
    func cancelMeanwhile() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "waiter").run?.id)
        let db = try PGConnection(conninfo)
        try Eventually.until("run \(id)'s process group recorded") {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND pgid IS NOT NULL", [String(id)]).first != nil
        }
        a.crash()
        // Marked for its owner (answered at once: the run is still loading while no batond of web-1 runs).
        let started = Date()
        let cancel = try Client(path: b.socket).call(Request(op: .cancel, run: id))
        #expect(cancel.error == nil, "\(cancel)")
        #expect(Date().timeIntervalSince(started) < 10, "the cancel waited for the run's end")
        let back = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "20s", scratch: scratch), reusing: a)
        try back.waitForLog("joined the fleet")
        defer { back.stop() }
        #expect(back.stderr.contains("took back 1 runs"), "\(back.stderr)")
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .cancelled && ended.host == "web-1", "\(ended)\n\(back.stderr)")
        #expect(Self.tagged(run: id, scratch: scratch).isEmpty)
    }

    /// Live processes of this test's run `run` (its environment names the test's scratch directory).
    static func tagged(run: Int64, scratch: String) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> Int32? in
            guard let pid = Int32(entry), FleetGuardTests.isLive(pid), let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return nil }
            let variables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard variables.contains("BATON_RUN_ID=\(run)"), variables.contains("GO=\(scratch)/go") else { return nil }
            return pid
        }
    }

    /// The run's second attempt began no sooner than its `retrying` transition's time plus the
    /// backoff it recorded (`quick`: 2 s, jittered), as the rows say (review-fleetrecovery9, 11).
    static func expectBackoffWaited(_ id: Int64, on db: PGConnection) throws {
        let rows = try db.query("""
            SELECT to_phase, at, coalesce((detail::jsonb ->> 'backoff')::bigint, 0) FROM transitions WHERE run_id = $1 ORDER BY seq
            """, [String(id)]).rows
        let retrying = try #require(rows.first { $0[0] == "retrying" })
        let again = try #require(rows.last { $0[0] == "loading" })
        let (at, backoff, next) = (Int64(retrying[1] ?? "") ?? 0, Int64(retrying[2] ?? "") ?? 0, Int64(again[1] ?? "") ?? 0)
        #expect(backoff > 0 && next >= at + backoff, "\(rows)")
    }

    /// Moves runs to web-2's live incarnation and marks web-1 gone, in one transaction: what a reap
    /// that moved them (`FleetTakeover`'s `resumed`) leaves when its hand-off to web-2's conductor is lost.
    static func moveToWeb2(_ ids: [Int64], on db: PGConnection) throws {
        try db.transaction {
            try db.query("""
                UPDATE runs r SET incarnation = h.incarnation, host = h.name FROM hosts h
                WHERE h.name = 'web-2' AND h.gone_at IS NULL AND r.id = ANY ($1::bigint[])
                """, ["{" + ids.map(String.init).joined(separator: ",") + "}"])
            try db.query("UPDATE hosts SET gone_at = now(), gone_reason = 'stopped' WHERE name = 'web-1' AND gone_at IS NULL")
        }
    }

    @Test("a retrying run moved to a live host whose hand-off to its conductor was lost is found from the rows: it waits out its backoff there and tries again; one whose action the host does not have is cancelled, removed (review-fleetrecovery9, 2)")
    func movedHandOffLost() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let quick = try #require(try FleetTests.trigger(a, "quick").run?.id)
        let flaky = try #require(try FleetTests.trigger(a, "flaky").run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("runs \(quick) and \(flaky) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id IN ($1, $2) AND phase = 'retrying'", [String(quick), String(flaky)]).rows.count == 2
        }) else { return }
        a.crash()
        // flaky's action as if a reload had taken it away from web-2 before the hand-off, in a row
        // made before fleet schema 27 (no stored definition: with one, the run finishes by it).
        try db.query("UPDATE runs SET action = 'unconfigured', definition = NULL WHERE id = $1", [String(flaky)])
        try Self.moveToWeb2([quick, flaky], on: db)
        let ends = { try db.query("SELECT id, phase, reason, attempts, host FROM runs WHERE id IN ($1, $2) ORDER BY id", [String(quick), String(flaky)]).rows }
        let rows = try Eventually.value("both runs ended on web-2: \(b.stderr.suffix(2_000))", ends) { rows in
            rows.count == 2 && rows.allSatisfy { ["failure", "cancelled"].contains($0[1]) }
        }
        let byID = Dictionary(rows.map { ($0[0] ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        let resumed = byID[String(quick)]
        #expect(resumed?[1] == "failure" && resumed?[2] != "host_lost" && resumed?[3] == "2" && resumed?[4] == "web-2", "\(rows)")
        #expect(byID[String(flaky)]?[1...2] == ["cancelled", "removed"], "\(rows)")
        try Self.expectBackoffWaited(quick, on: db)
    }

    /// web-2 (one start slot) runs the gated `waiter` first (so that `action`'s 2 s backoff cannot run
    /// out on web-1 before web-1 is killed); `action`'s run on web-1 fails and waits to retry; web-1 is
    /// killed and the run moved to web-2, where it waits for the slot (web-2's log says so). Nil where
    /// the run never reached retrying (the wait has recorded why).
    static func movedBehindWaiter(_ action: String, scratch: String) throws -> (b: Daemon, db: PGConnection, waiter: Int64, moved: Int64)? {
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch, slots: 1)
        let waiter = try #require(try FleetTests.trigger(b, "waiter").run?.id)
        Self.waitForStart(scratch, of: b)
        let moved = try #require(try FleetTests.trigger(a, action).run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("run \(moved) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(moved)]).first != nil
        }) else {
            a.stop()
            b.stop()
            return nil
        }
        a.crash()
        try Self.moveToWeb2([moved], on: db)
        try b.waitForLog("1 retrying runs moved here wait for a free slot (maxConcurrentRuns 1) to resume: run \(moved)")
        return (b, db, waiter, moved)
    }

    @Test("a retrying run moved to a host that runs its maxConcurrentRuns already waits for a free slot before it resumes, never running past the limit (review-fleetrecovery9, 3)")
    func movedWaitsForSlot() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        guard let (b, db, waiter, quick) = try Self.movedBehindWaiter("quick", scratch: scratch) else { return }
        defer { b.stop() }
        let held = try db.query("SELECT phase, attempts FROM runs WHERE id = $1", [String(quick)]).rows
        #expect(held == [["retrying", "1"]], "\(held)")
        // The waiter ends: its slot goes to the moved run, which tries again.
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let row = try Eventually.value("run \(quick) ended: \(b.stderr.suffix(2_000))", {
            try db.query("SELECT phase, attempts, host FROM runs WHERE id = $1", [String(quick)]).rows
        }) { $0.first?[0] == "failure" }
        #expect(row == [["failure", "2", "web-2"]], "\(row)")
        let waited = try db.query("SELECT phase FROM runs WHERE id = $1", [String(waiter)]).rows
        #expect(waited == [["failure"]], "\(waited)")
        try Self.expectBackoffWaited(quick, on: db)
    }

    @Test("a retrying run moved to a host with no free slot and cancelled while it waits ends cancelled at the host's next sweep, with no other attempt, even once a slot frees (review-fleetrecovery10, H1)")
    func movedCancelledWhileWaiting() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        guard let (b, db, waiter, id) = try Self.movedBehindWaiter("tries", scratch: scratch) else { return }
        defer { b.stop() }
        // Only marked (web-2's conductor does not hold the run): the sweep ends it as the mark says.
        // The cancel waits for the end, off the test's thread: without the sweep's end it would wait for the slot.
        let socket = b.socket
        Thread.detachNewThread { _ = try? Client(path: socket).call(Request(op: .cancel, run: id)) }
        let row = try Eventually.value("run \(id) cancelled: \(b.stderr.suffix(2_000))", {
            try db.query("SELECT phase, reason, attempts, host FROM runs WHERE id = $1", [String(id)]).rows
        }) { $0.first?[0] == "cancelled" }
        #expect(row == [["cancelled", "cancelled", "1", "web-2"]], "\(row)")
        try b.waitForLog("run \(id) was moved here to wait to retry, and stopped meanwhile")
        // The waiter ends and its slot frees: the cancelled run takes no attempt with it.
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let waited = try #require(try FleetTests.wait(b, run: waiter))
        #expect(waited.phase == .failure, "\(waited)")
        try Self.expect(id, phases: ["queued", "loading", "retrying", "cancelled"], on: db, marker: (scratch, "tries", "attempt\n"))
    }

    @Test("a retrying run cancelled while its host is dead ends cancelled at the takeover, by the canceller, with no other attempt, though its backoff ran out (review-fleetrecovery10, H1)")
    func retryingCancelledWhileDead() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "2s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "tries").run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("run \(id) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(id)]).first != nil
        }) else { return }
        a.crash()
        // Marked for web-1, which is gone: web-2's reaper ends it as the mark says once web-1's lease ran out.
        let cancel = try Client(path: b.socket).call(Request(op: .cancel, run: id))
        #expect(cancel.error == nil, "\(cancel)")
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .cancelled && ended.reason == "cancelled" && ended.attempts == 1, "\(ended)\n\(b.stderr.suffix(2_000))")
        try Self.expect(id, phases: ["queued", "loading", "retrying", "cancelled"], on: db, marker: (scratch, "tries", "attempt\n"))
    }

    @Test("a loading run of an action that restarts when interrupted, cancelled while its host is dead, ends cancelled at the takeover: not restarted (the requeue cleared its mark)")
    func loadingCancelledWhileDead() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "2s", scratch: scratch)
        let b = try Self.host(conninfo, "web-2", lease: "20s", scratch: scratch)
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "again").run?.id)
        guard try Eventually.until("run \(id) started", { access(scratch + "/again", F_OK) == 0 }) else { return }
        a.crash()
        let cancel = try Client(path: b.socket).call(Request(op: .cancel, run: id))
        #expect(cancel.error == nil, "\(cancel)")
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .cancelled && ended.reason == "cancelled", "\(ended)\n\(b.stderr.suffix(2_000))")
        let db = try PGConnection(conninfo)
        try Self.expect(id, phases: ["queued", "loading", "cancelled"], on: db, marker: (scratch, "again", "start\n"))
    }

    @Test("a host that is stopping leaves a retrying run moved to it alone (its conductor would only stop it, shutdown); once it is gone, a host that takes runs resumes it (review-fleetrecovery9, 7)")
    func movedToStoppingHost() throws {
        let scratch = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let conninfo = try Postgres.server().database()
        let a = try Self.host(conninfo, "web-1", lease: "20s", scratch: scratch)
        // web-2 drains for a minute: its mortal run (not left to a shim) holds the stop that long.
        let b = try Daemon(config: Self.config(conninfo, host: "web-2", lease: "2s", scratch: scratch, grace: "60s"))
        try b.waitForLog("joined the fleet")
        let c = try Self.host(conninfo, "web-3", lease: "20s", scratch: scratch)
        defer { c.stop() }
        let db = try PGConnection(conninfo)
        let mortal = try #require(try FleetTests.trigger(b, "mortal").run?.id)
        guard try Eventually.until("run \(mortal) loading", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'loading'", [String(mortal)]).first != nil
        }) else { return }
        let quick = try #require(try FleetTests.trigger(a, "quick").run?.id)
        guard try Eventually.until("run \(quick) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(quick)]).first != nil
        }) else { return }
        a.crash()
        b.signal(SIGTERM)
        try b.waitForLog("stopping: no new triggers")
        try Self.moveToWeb2([quick], on: db)
        try b.waitForLog("1 retrying runs moved here are left for a host that takes runs: this one is stopping")
        let left = try db.query("SELECT phase, attempts, host FROM runs WHERE id = $1", [String(quick)]).rows
        #expect(left == [["retrying", "1", "web-2"]], "\(left)")
        // web-2 gone (its lease runs out), web-3 takes the run over and tries it again.
        b.crash()
        let row = try Eventually.value("run \(quick) ended: \(c.stderr.suffix(2_000))", {
            try db.query("SELECT phase, attempts, host FROM runs WHERE id = $1", [String(quick)]).rows
        }) { $0.first?[0] == "failure" }
        #expect(row == [["failure", "2", "web-3"]], "\(row)")
    }
}
