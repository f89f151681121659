import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// `needs` across real batond hosts on one PostgreSQL database (schema 21): the host that makes
/// a run of `c` triggers `build-a` and `build-b` through the fleet's trigger path (joining a run
/// of either in flight on any host), the run waits `queued` in its row, and the wait is decided
/// once, by whichever host sees the needed runs end, even when the host that asked is gone.
@Suite("End to end: needs across a fleet", .serialized, .offPool)
struct FleetNeedsTests {
    /// build-a and build-b each wait for their gate; build-a exits with the code in `DIR/a-code` (0 if none).
    static func actions(_ a: FifoGate, _ b: FifoGate) -> String {
        """
        "build-a": { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null; exit $(cat \\"$DIR/a-code\\" 2>/dev/null || echo 0)"],
                     env: { GATE: "\(a.path)", DIR: "\(a.directory)" } },
        "build-b": { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(b.path)" } },
        c: { exec: ["true"], needs: ["build-a", "build-b"] },
        """
    }

    static func row(_ db: PGConnection, _ id: Int64) throws -> [String?] {
        try db.query("SELECT phase, host, needs, reason, error FROM runs WHERE id = $1", [String(id)]).first ?? []
    }

    /// The runs c's run waits for, once its needs are written: (action, run, host), in order.
    static func needed(_ db: PGConnection, _ id: Int64) throws -> [[String?]] {
        try Eventually.until("the needs of run \(id) asked") { try row(db, id)[2] != "asking" }
        return try db.query("""
            SELECT n.action, n.needed_run, r.host FROM run_needs n JOIN runs r ON r.id = n.needed_run WHERE n.run_id = $1 ORDER BY n.position
            """, [String(id)]).rows
    }

    static func phases(_ db: PGConnection, _ id: Int64) throws -> [String?] {
        try db.query("SELECT to_phase FROM transitions WHERE run_id = $1 ORDER BY seq", [String(id)]).rows.map { $0[0] }
    }

    @Test("c needs build-a and build-b: build-a runs on web-1, build-b on web-2 (joined); c starts once, after both succeeded; show lists both ways on either host")
    func bothSucceed() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let held = try #require(try PolicyTests.trigger(hosts[1], "build-b").run?.id)
        let c = try #require(try PolicyTests.trigger(hosts[0], "c").run)
        #expect(c.phase == .queued)
        let needed = try Self.needed(db, c.id)
        #expect(needed.map(\.[0]) == ["build-a", "build-b"] && needed[1][1] == String(held), "\(needed)")
        #expect(needed.map(\.[2]) == ["web-1", "web-2"], "\(needed)")
        let aID = try #require(needed.first?[1].flatMap { Int64($0) })
        #expect(try Self.row(db, c.id)[0] == "queued")
        try Eventually.until("status on web-2 says what c's run waits for") {
            try hosts[1].baton("status", "c").stdout.contains("waiting for build-a run \(aID), build-b run \(held)")
        }
        let waiting = try hosts[1].baton("show", String(c.id)).stdout
        #expect(waiting.contains("needs: build-a run \(aID) (") && waiting.contains("build-b run \(held) ("), "\(waiting)")
        a.release()
        #expect(try FleetTests.wait(hosts[1], run: aID)?.phase == .success)
        #expect(try Self.row(db, c.id)[0] == "queued", "c started before build-b ended")
        b.release()
        let ran = try #require(try FleetTests.wait(hosts[1], run: c.id))
        #expect(ran.phase == .success, "\(ran)")
        #expect(try Self.phases(db, c.id) == ["queued", "loading", "success"])
        let ends = try db.query("SELECT max(ended_at) FROM runs WHERE id = ANY ($1::bigint[])", ["{\(aID),\(held)}"]).first?[0].flatMap { Int64($0) } ?? .max
        #expect((ran.startedAt?.rawValue ?? 0) >= ends, "c started before its needs ended")
        let shown = try hosts[0].baton("show", String(held)).stdout
        #expect(shown.contains("needed by: c run \(c.id) (success)"), "\(shown)")
        #expect(try db.query("SELECT phase FROM run_needs WHERE run_id = $1 ORDER BY position", [String(c.id)]).rows.map(\.[0]) == ["success", "success"])
        for host in hosts { host.stop() }
    }

    @Test("build-a fails: c ends failure (needs build-a: run N failed) without starting, decided once though both hosts see the end")
    func oneFails() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        try "3".write(toFile: a.directory + "/a-code", atomically: true, encoding: .utf8)
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let held = try #require(try PolicyTests.trigger(hosts[1], "build-b").run?.id)
        let c = try #require(try PolicyTests.trigger(hosts[0], "c").run)
        let needed = try Self.needed(db, c.id)
        let aID = try #require(needed.first?[1].flatMap { Int64($0) })
        a.release()
        let ended = try #require(try FleetTests.wait(hosts[1], run: c.id))
        #expect(ended.phase == .failure && ended.error == "needs build-a: run \(aID) failed", "\(ended)")
        #expect(try Self.phases(db, c.id) == ["queued", "failure"], "c started, or its end was written twice")
        #expect(try Self.row(db, c.id)[2] == "failed")
        // build-b goes on: it may serve others.
        #expect(try Self.row(db, held)[0] == "loading")
        b.release()
        #expect(try FleetTests.wait(hosts[0], run: held)?.phase == .success)
        #expect(try Self.phases(db, c.id) == ["queued", "failure"])
        let shown = try hosts[0].baton("show", String(c.id)).stdout
        #expect(shown.contains("needs: build-a run \(aID) (failure, exit), build-b run \(held) (success)"), "\(shown)")
        for host in hosts { host.stop() }
    }

    @Test("deploy fails because its build failed: its end is any failure's: on: { failure } fires, the key's last outcome is failure, pauseAfterFailures: 1 pauses it; a reload on both hosts that drops its needs and its hook, or its hook only (outside the fingerprint), while it waits changes none of it (its definition's needs and hooks, review-fleetdefs14 M3, M4)",
          arguments: [nil, #"needs: ["build-a"], on: { failure: "alert" }, "#, #"on: { failure: "alert" }, "#])
    func failureEndFiresHooks(dropped: String?) throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        try "3".write(toFile: a.directory + "/a-code", atomically: true, encoding: .utf8)
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b).replacingOccurrences(
            of: "c: { exec: [\"true\"], needs: [\"build-a\", \"build-b\"] },",
            with: "c: { exec: [\"true\"], needs: [\"build-a\"], on: { failure: \"alert\" }, pauseAfterFailures: 1 }, alert: { exec: [\"true\"] },"),
            conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let c = try #require(try PolicyTests.trigger(hosts[0], "c").run)
        let aID = try #require(try Self.needed(db, c.id).first?[1].flatMap { Int64($0) })
        if let dropped {
            for host in hosts {
                let text = try String(contentsOfFile: host.configPath, encoding: .utf8)
                #expect(text.contains(dropped))
                try text.replacingOccurrences(of: dropped, with: "").write(toFile: host.configPath, atomically: true, encoding: .utf8)
                #expect(try host.baton("reload").code == 0)
            }
        }
        a.release()
        let ended = try #require(try FleetTests.wait(hosts[1], run: c.id))
        #expect(ended.phase == .failure && ended.error == "needs build-a: run \(aID) failed", "\(ended)")
        try Eventually.until("c's failure hook fired") {
            try db.query("SELECT 1 FROM runs WHERE action = 'alert' AND hook_run = $1", [String(c.id)]).first != nil
        }
        #expect(try db.query("SELECT k.last_outcome FROM keys k JOIN runs r ON r.key = k.key WHERE r.id = $1", [String(c.id)]).first?[0] == "failure")
        #expect(try db.query("SELECT 1 FROM pauses WHERE action = 'c'").first != nil, "pauseAfterFailures did not count the failure")
        _ = b
        for host in hosts { host.stop() }
    }

    @Test("a needed run cancelled by its host's shutdown: c's run on the other host asks that need again rather than failing, as one machine's next start does, keeps its other need's live run, and runs once both succeeded (audit D7)")
    func needStoppedByShutdown() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            "build-a": { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(a.path)" }, survivesRestart: false },
            "build-b": { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(b.path)" }, survivesRestart: false },
            c: { exec: ["true"], needs: ["build-a", "build-b"] },
            """, conninfo: conninfo, settings: "shutdownGrace: \"0s\",")
        let db = try PGConnection(conninfo)
        let first = try #require(try PolicyTests.trigger(hosts[0], "build-a").run?.id)
        let second = try #require(try PolicyTests.trigger(hosts[1], "build-b").run?.id)
        let c = try #require(try PolicyTests.trigger(hosts[1], "c").run)
        #expect(try Self.needed(db, c.id).map { $0[1] } == [String(first), String(second)], "c did not join the runs in flight")
        hosts[0].signal(SIGTERM)
        #expect(hosts[0].waitForExit(within: 30) != nil, "web-1 did not stop: \(hosts[0].stderr.suffix(2_000))")
        #expect(try Self.row(db, first)[0...3] == ["cancelled", "web-1", nil, "shutdown"])
        // web-2 asks build-a again: a new run, on web-2; c waits for it, queued.
        guard try Eventually.until("c asks build-a again", {
            try Self.row(db, c.id)[2] == "waiting"
                && db.query("SELECT needed_run FROM run_needs WHERE run_id = $1 AND position = 0", [String(c.id)]).first?[0] != String(first)
        }) else { return }
        #expect(try Self.row(db, c.id)[0] == "queued", "c's wait failed")
        let again = try #require(try db.query("SELECT needed_run FROM run_needs WHERE run_id = $1 AND position = 0", [String(c.id)]).first?[0]
            .flatMap { Int64($0) })
        // build-b's run, live on web-2, is kept, not asked again (review-fleetrecovery9, 11).
        #expect(try Self.needed(db, c.id).map { $0[1] } == [String(again), String(second)])
        guard try Eventually.until("build-a's new run loading", { try Self.row(db, again)[0] == "loading" }) else { return }
        a.release()
        b.release()
        let ran = try #require(try FleetTests.wait(hosts[1], run: c.id))
        #expect(ran.phase == .success, "\(ran)")
        #expect(try Self.phases(db, c.id) == ["queued", "loading", "success"])
        #expect(try Self.row(db, again)[0...1] == ["success", "web-2"])
        hosts[1].stop()
    }

    @Test("a trigger whose need is paused (on another host) is refused paused, as on one machine: no run is made, not even of the need asked before it; the refusal is recorded against the need (audit D1)")
    func needPaused() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b).replacingOccurrences(of: "needs: [\"build-a\", \"build-b\"]",
                                                                                           with: "needs: [\"build-b\", \"build-a\"]"), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        #expect(try hosts[1].baton("pause", "build-a", "--reason", "migrating db").code == 0)
        // Decided in web-1's trigger transaction, which reads build-a's pause row with c's key.
        let refused = try PolicyTests.trigger(hosts[0], "c")
        #expect(refused.run == nil && refused.error?.code == .paused, "\(refused)")
        #expect((refused.error?.message ?? "").hasPrefix("build-a is paused by ") && (refused.error?.message ?? "").hasSuffix("migrating db"),
                "\(refused)")
        #expect(try db.query("SELECT count(*) FROM runs").first?[0] == "0", "a run was made for a trigger refused")
        let records = try db.query("SELECT action, decision, run_id, via FROM triggers ORDER BY id").rows
        #expect(records == [["build-a", "paused", nil, "needed by a trigger of c"]], "\(records)")
        let cli = try hosts[1].baton("run", "c")
        #expect(cli.code == 75 && cli.stderr.contains("migrating db"), "\(cli.stdout)\(cli.stderr)")
        // Resumed: c's trigger makes its run, which waits for both.
        #expect(try hosts[0].baton("resume", "build-a").code == 0)
        let c = try #require(try PolicyTests.trigger(hosts[1], "c").run)
        #expect(try Self.needed(db, c.id).map(\.[0]) == ["build-b", "build-a"])
        a.release()
        b.release()
        #expect(try FleetTests.wait(hosts[0], run: c.id)?.phase == .success)
        for host in hosts { host.stop() }
    }

    @Test("a hook whose action's need is paused makes no run, decided in the end's transaction: the need's refusal recorded against it, via the hook (audit D1)")
    func hookNeedPaused() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            build: { exec: ["true"] },
            ship: { exec: ["true"], needs: ["build"] },
            broken: { exec: ["false"], on: { failure: "ship" } },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        #expect(try hosts[1].baton("pause", "build", "--reason", "migrating db").code == 0)
        #expect(try PolicyTests.trigger(hosts[0], "broken", detach: false).run?.phase == .failure)
        let records = { try db.query("SELECT action, decision, run_id, via FROM triggers ORDER BY id").rows }
        guard try Eventually.until("the end's transaction recorded the need's refusal", { try !records().isEmpty }) else { return }
        let refused = try records()
        #expect(refused.count == 1 && refused[0][0...2] == ["build", "paused", nil], "\(refused)")
        #expect(refused.first?[3]?.hasPrefix("needed by ship, the failure hook of broken run") == true, "\(refused)")
        #expect(try db.query("SELECT action FROM runs ORDER BY id").rows == [["broken"]], "the hook made a run")
        for host in hosts { host.stop() }
    }

    @Test("a hook's run with needs (made in the end's transaction) asks them too; a need's params take the needing run's ({ref})")
    func hookAndParams() throws {
        let gate = try FifoGate()
        let log = gate.directory + "/log"
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            build: { exec: ["sh", "-c", "echo $BATON_PARAM_REF >> \\"$LOG\\""], env: { LOG: "\(log)" },
                     params: { ref: { default: "main" } }, keyParams: ["ref"] },
            ship: { exec: ["true"], params: { ref: { default: "main" } }, needs: [{ action: "build", params: { ref: "{ref}" } }] },
            broken: { exec: ["false"], on: { failure: "ship" } },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        #expect(try PolicyTests.trigger(hosts[0], "broken", detach: false).run?.phase == .failure)
        // ship's key is held by the hook's run until it ran (its policy rejects meanwhile).
        #expect(try FleetHookTests.settled(db))
        let shipped = try PolicyTests.trigger(hosts[1], "ship", params: ["ref": "v2"], detach: false).run
        #expect(shipped?.phase == .success, "\(String(describing: shipped))")
        #expect(try FleetHookTests.settled(db))
        let ships = try db.query("""
            SELECT s.hook_run IS NOT NULL, s.phase, b.params, b.phase FROM runs s JOIN run_needs n ON n.run_id = s.id JOIN runs b ON b.id = n.needed_run
            WHERE s.action = 'ship' ORDER BY s.id
            """).rows
        #expect(ships.count == 2 && ships.allSatisfy { $0[1] == "success" && $0[3] == "success" }, "\(ships)")
        #expect(ships.first { $0[0] == "t" }?[2]?.contains("main") == true && ships.first { $0[0] == "f" }?[2]?.contains("v2") == true, "\(ships)")
        #expect(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").sorted() == ["main", "v2"])
        for host in hosts { host.stop() }
    }

    @Test("a reload that removes c's needs on every host while its run waits: the run still waits for the runs it asked, and starts once they succeeded")
    func needsRemovedByReload() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let c = try #require(try PolicyTests.trigger(hosts[0], "c").run)
        #expect(try Self.needed(db, c.id).count == 2)
        for host in hosts {
            let text = try String(contentsOfFile: host.configPath, encoding: .utf8)
            try text.replacingOccurrences(of: "needs: [\"build-a\", \"build-b\"]", with: "").write(toFile: host.configPath, atomically: true, encoding: .utf8)
            #expect(try host.baton("reload").code == 0)
        }
        a.release()
        b.release()
        // Bounded: a wait nobody decides would hold `wait` for ever.
        guard try Eventually.until("c's run decided", { try Self.row(db, c.id)[0] == "success" }) else { return }
        #expect(try Self.phases(db, c.id) == ["queued", "loading", "success"])
        for host in hosts { host.stop() }
    }

    @Test("kill -9 of the host whose run waits: the survivor takes it over, decides its wait once its needs succeed, and runs it once")
    func waitingHostKilled() throws {
        let (a, b) = (try FifoGate(), try FifoGate())
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(a, b), lease: "2s", conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let aID = try #require(try PolicyTests.trigger(hosts[1], "build-a").run?.id)
        let bID = try #require(try PolicyTests.trigger(hosts[1], "build-b").run?.id)
        let c = try #require(try PolicyTests.trigger(hosts[0], "c").run)
        let needed = try Self.needed(db, c.id)
        #expect(needed.map { $0[1] } == [String(aID), String(bID)], "c did not join the runs in flight: \(needed)")
        hosts[0].crash()
        a.release()
        b.release()
        let ran = try #require(try FleetTests.wait(hosts[1], run: c.id))
        #expect(ran.phase == .success && ran.host == "web-2", "\(ran)")
        #expect(try Self.phases(db, c.id) == ["queued", "loading", "success"])
        hosts[1].stop()
    }

    @Test("retention spares a run an unfinished run needs, as one machine's: w needs a and b; a's run succeeds, two more runs of a end, prune (maxRunsPerAction 1), then b succeeds: w runs (audit D6)")
    func pruneSparesNeeded() throws {
        let b = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(1, actions: """
            a: { exec: ["true"], retention: { maxRunsPerAction: 1 } },
            b: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(b.path)" } },
            w: { exec: ["true"], needs: ["a", "b"] },
            """, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        let w = try #require(try PolicyTests.trigger(hosts[0], "w").run)
        let aID = try #require(try Self.needed(db, w.id).first?[1].flatMap { Int64($0) })
        #expect(try FleetTests.wait(hosts[0], run: aID)?.phase == .success)
        for _ in 0..<2 {
            let more = try #require(try FleetTests.trigger(hosts[0], "a").run?.id)
            #expect(try FleetTests.wait(hosts[0], run: more)?.phase == .success)
        }
        #expect(try hosts[0].baton("prune").stdout == "removed 1 run: a 1\n")
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [String(aID)]).first?[0] == "success", "the run w needs was pruned")
        b.release()
        let ran = try #require(try FleetTests.wait(hosts[0], run: w.id))
        #expect(ran.phase == .success, "\(ran)")
    }
}
