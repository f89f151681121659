import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// `on:` hooks across real batond hosts on one PostgreSQL database: the end's transaction
/// decides the hooks with the hook keys' rows held, so a hook fires once per qualifying end
/// whichever host records it, `change` compares with the key's last outcome on any host, and a
/// host killed after the end leaves its hook run to a survivor.
@Suite("End to end: hooks across a fleet", .serialized, .offPool)
struct FleetHookTests {
    /// deploy fails with output on both streams, its failure hook is page; page keeps what it was
    /// told in `OUT/hook-RUN.env` and `.out`, or, pressed by hand with `hold=yes`, holds page's
    /// key until the gate opens. flaky exits with its `code`; its `change` hook is flip.
    static func actions(out: String, gate: FifoGate) -> String {
        """
        deploy: { exec: ["sh", "-c", "echo deploying; echo step 3 failed >&2; exit 3"], on: { failure: "page" } },
        page: { exec: ["sh", "-c", "if [ \\"$BATON_PARAM_HOLD\\" = yes ]; then cat \\"$GATE\\" > /dev/null; exit 0; fi; env | grep '^BATON_HOOK_' | sort > \\"$OUT/hook-$BATON_RUN_ID.env\\"; cat \\"$BATON_HOOK_OUTPUT\\" > \\"$OUT/hook-$BATON_RUN_ID.out\\""],
                env: { OUT: "\(out)", GATE: "\(gate.path)" }, params: { hold: { default: "no" } }, policy: "queue" },
        flaky: { exec: ["sh", "-c", "exit $BATON_PARAM_CODE"], params: { code: { default: "0" } }, policies: ["reject", "queue"], on: { change: "flip" } },
        flip: { exec: ["true"], policy: "queue" },
        """
    }

    static func trigger(_ host: Daemon, _ action: String, _ params: [String: String] = [:], detach: Bool = true) throws -> Response {
        try Client(path: host.socket).call(Request(op: .trigger, action: action, params: params, detach: detach))
    }

    /// The hook runs recorded in the fleet's database: (id, action, firing run, event), by id.
    static func hookRuns(_ db: PGConnection) throws -> [[String?]] {
        try db.query("SELECT id, action, hook_run, hook_event FROM runs WHERE hook_run IS NOT NULL ORDER BY id").rows
    }

    /// Waits (bounded) until no run of the fleet is queued, loading or retrying.
    static func settled(_ db: PGConnection, within seconds: Double = 60) throws -> Bool {
        try Eventually.until("no run of the fleet queued, loading or retrying", within: seconds) {
            try db.query("SELECT count(*) FROM runs WHERE phase IN ('queued', 'loading', 'retrying')").first?[0] == "0"
        }
    }

    @Test("a failure on one host fires its hook: the hook run sees BATON_HOOK_* and the output tail; show on another host lists it both ways")
    func failureHook() throws {
        let out = try HookEndToEndTests.scratch()
        let gate = try FifoGate()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(out: out, gate: gate))
        let failed = try #require(try Self.trigger(hosts[0], "deploy", detach: false).run)
        #expect(failed.phase == .failure)
        let shownFiring = try hosts[1].baton("show", String(failed.id)).stdout
        let hookID = try #require(shownFiring.split(separator: "\n").first { $0.contains("failure → page run ") }
            .flatMap { line in line.components(separatedBy: "failure → page run ").last?.prefix { $0.isNumber } }.flatMap { Int64($0) },
            "\(shownFiring)")
        #expect(try FleetTests.wait(hosts[1], run: hookID)?.phase == .success)
        let env = try HookEndToEndTests.told(out, run: Int(hookID))
        #expect(env["BATON_HOOK_RUN_ID"] == String(failed.id) && env["BATON_HOOK_ACTION"] == "deploy" && env["BATON_HOOK_KEY"] == "deploy", "\(env)")
        #expect(env["BATON_HOOK_PHASE"] == "failure" && env["BATON_HOOK_EXIT_CODE"] == "3" && env["BATON_HOOK_EVENT"] == "failure", "\(env)")
        let tail = try String(contentsOfFile: "\(out)/hook-\(hookID).out", encoding: .utf8)
        #expect(tail.contains("deploying") && tail.contains("step 3 failed"), "\(tail)")
        let shown = try hosts[1].baton("show", String(hookID)).stdout
        #expect(shown.contains("triggered by the failure hook of deploy run \(failed.id)"), "\(shown)")
        #expect(HookEndToEndTests.hookFiles(out) == ["hook-\(hookID).env"])
    }

    @Test("change is decided from the key's last outcome in its row: ends on three hosts in turn fire it exactly on each flip")
    func changeAcrossHosts() throws {
        let out = try HookEndToEndTests.scratch()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(3, actions: Self.actions(out: out, gate: try FifoGate()), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        // success (no previous: nothing), failure (a change), failure (none), success (a change):
        // each on another host than the end before it, whose own table never saw that end.
        var ids: [Int64] = []
        for (index, code) in ["0", "1", "1", "0"].enumerated() {
            let run = try #require(try Self.trigger(hosts[index % 3], "flaky", ["code": code], detach: false).run)
            #expect(run.phase == (code == "0" ? .success : .failure))
            ids.append(run.id)
        }
        #expect(try Self.settled(db))
        let hooks = try Self.hookRuns(db)
        #expect(hooks.map { [$0[1], $0[2], $0[3]] } == [["flip", String(ids[1]), "change"], ["flip", String(ids[3]), "change"]], "\(hooks)")
        #expect(try db.query("SELECT last_outcome FROM keys WHERE key = 'flaky'").first?[0] == "success")
    }

    @Test("kill -9 of the host that recorded the end, its hook run queued behind page's key held on another host: the survivor takes it over and runs it once, told what fired it")
    func hostKilledAfterTheEnd() throws {
        let out = try HookEndToEndTests.scratch()
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions(out: out, gate: gate), lease: "2s", conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let held = try #require(try Self.trigger(hosts[1], "page", ["hold": "yes"]).run?.id)
        let failed = try #require(try Self.trigger(hosts[0], "deploy", detach: false).run)
        #expect(failed.phase == .failure)
        // The end and its hook run committed together, the hook run web-1's, queued behind the held run.
        let hook = try #require(try Self.hookRuns(db).first, "no hook run was committed with the end")
        #expect(hook[1] == "page" && hook[2] == String(failed.id) && hook[3] == "failure")
        let hookID = try #require(hook[0].flatMap { Int64($0) })
        #expect(try db.query("SELECT phase, host FROM runs WHERE id = $1", [String(hookID)]).first == ["queued", "web-1"])
        hosts[0].crash()
        // The survivor reaps web-1 once its lease has run out and takes the queued hook run over.
        try Eventually.until("web-2 took hook run \(hookID) over") { try db.query("SELECT host FROM runs WHERE id = $1", [String(hookID)]).first?[0] == "web-2" }
        #expect(HookEndToEndTests.hookFiles(out).isEmpty, "the hook ran before its key was free")
        gate.release()
        #expect(try FleetTests.wait(hosts[1], run: held)?.phase == .success)
        let ran = try #require(try FleetTests.wait(hosts[1], run: hookID))
        #expect(ran.phase == .success && ran.host == "web-2", "\(ran)")
        let env = try HookEndToEndTests.told(out, run: Int(hookID))
        #expect(env["BATON_HOOK_RUN_ID"] == String(failed.id) && env["BATON_HOOK_PHASE"] == "failure" && env["BATON_HOOK_EXIT_CODE"] == "3", "\(env)")
        let tail = try String(contentsOfFile: "\(out)/hook-\(hookID).out", encoding: .utf8)
        #expect(tail.contains("step 3 failed"), "the taken-over hook run lost the output tail: \(tail)")
        #expect(try Self.settled(db))
        #expect(HookEndToEndTests.hookFiles(out) == ["hook-\(hookID).env"], "the hook ran more than once")
        #expect(try Self.hookRuns(db).count == 1)
    }

    @Test("a host killed mid-run: the survivor ends the run host_lost and fires its failure hook in that transaction; the hook runs once, there")
    func hostLostFiresTheHook() throws {
        let out = try HookEndToEndTests.scratch()
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hang = #"hang: { exec: ["sh", "-c", "echo hanging; cat \"$GATE\" > /dev/null"], env: { GATE: "\#(gate.path)" }, on: { failure: "page" } },"#
        let hosts = try FleetTests.fleet(2, actions: Self.actions(out: out, gate: gate) + hang, lease: "2s", conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let id = try #require(try Self.trigger(hosts[0], "hang").run?.id)
        try Eventually.until("run \(id) loading") { try db.query("SELECT phase FROM runs WHERE id = $1", [String(id)]).first?[0] == "loading" }
        hosts[0].crash()
        let ended = try #require(try FleetTests.wait(hosts[1], run: id))
        #expect(ended.phase == .failure && ended.reason == "host_lost", "\(ended)")
        let hooks = try Self.hookRuns(db)
        #expect(hooks.count == 1 && hooks.first?[1] == "page" && hooks.first?[2] == String(id) && hooks.first?[3] == "failure", "\(hooks)")
        let hookID = try #require(hooks.first?[0].flatMap { Int64($0) })
        let ran = try #require(try FleetTests.wait(hosts[1], run: hookID))
        #expect(ran.phase == .success && ran.host == "web-2", "\(ran)")
        let env = try HookEndToEndTests.told(out, run: Int(hookID))
        #expect(env["BATON_HOOK_RUN_ID"] == String(id) && env["BATON_HOOK_REASON"] == "host_lost", "\(env)")
        #expect(try Self.settled(db))
        #expect(HookEndToEndTests.hookFiles(out) == ["hook-\(hookID).env"])
    }

    @Test("a storm over three hosts: 45 failing runs on their own keys, their failure hook a replace on one key: exactly one hook run per failed run, none lost, none doubled")
    func storm() throws {
        let conninfo = try Postgres.server().database()
        let actions = """
            fail: { exec: ["sh", "-c", "echo failing $BATON_PARAM_N; exit 1"], params: { n: { default: "0" } }, keyParams: ["n"], on: { failure: "alert" } },
            alert: { exec: ["true"], policy: "replace" },
            """
        let hosts = try FleetTests.fleet(3, actions: actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let answers = Collected<Response>()
        inParallel(45) { index in
            if let answer = try? Self.trigger(hosts[index % 3], "fail", ["n": String(index)]) { answers.append(answer) }
        }
        #expect(answers.all.count == 45 && answers.all.allSatisfy { $0.decision == .created }, "\(answers.all.map { $0.error?.message ?? "ok" })")
        #expect(try Self.settled(db))
        let failed = try db.query("SELECT id FROM runs WHERE action = 'fail' AND phase = 'failure' ORDER BY id").rows.compactMap { $0[0] }
        #expect(failed.count == 45)
        let hooks = try Self.hookRuns(db)
        // Every failed run made one alert run: none lost (each failed run appears), none doubled (once each).
        #expect(hooks.compactMap { $0[2] }.sorted { Int($0)! < Int($1)! } == failed, "\(hooks.count) hook runs for \(failed.count) failures")
        #expect(hooks.allSatisfy { $0[1] == "alert" && $0[3] == "failure" })
        // Each either ran or was replaced by a later one; no two loaded at once (the key's index holds it).
        let phases = try db.query("SELECT phase, count(*) FROM runs WHERE action = 'alert' GROUP BY phase ORDER BY phase").rows
        #expect(phases.allSatisfy { $0[0] == "success" || $0[0] == "cancelled" }, "\(phases)")
        #expect(try db.query("SELECT count(*) FROM triggers WHERE action = 'alert'").first?[0] == "0")
    }

    @Test("a storm over three hosts on one failing key (queue), its failure hook a queue too: every failed run's hook is decided once, a run or a record, none lost, none doubled")
    func stormOnOneKey() throws {
        let conninfo = try Postgres.server().database()
        let actions = """
            flop: { exec: ["sh", "-c", "echo flopping; exit 1"], policy: "queue", on: { failure: "tally" } },
            tally: { exec: ["true"], policy: "queue" },
            """
        let hosts = try FleetTests.fleet(3, actions: actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let answers = Collected<Response>()
        inParallel(45) { index in if let answer = try? Self.trigger(hosts[index % 3], "flop") { answers.append(answer) } }
        #expect(answers.all.count == 45 && answers.all.allSatisfy { $0.run != nil }, "\(answers.all.map { $0.error?.message ?? "ok" })")
        #expect(try Self.settled(db))
        let failed = try db.query("SELECT id FROM runs WHERE action = 'flop' AND phase = 'failure' ORDER BY id").rows.compactMap { $0[0] }
        #expect(failed.count == Set(answers.all.compactMap { $0.run?.id }).count, "every run the storm made failed")
        let fired = try Self.hookRuns(db).compactMap { $0[2] }
        #expect(Set(fired).count == fired.count && Set(fired).isSubset(of: Set(failed)), "one hook run per failed run at most: \(fired)")
        // The other failures' hooks coalesced into the queued tally run (or joined it): one record each.
        let records = Int(try db.query("SELECT count(*) FROM triggers WHERE action = 'tally'").first?[0] ?? "") ?? -1
        #expect(fired.count + records == failed.count, "\(fired.count) hook runs and \(records) records for \(failed.count) failures")
    }

    @Test("a hook whose action has a cooldown is cooled across hosts: a failure on another host after the hook run's success records a cooled trigger against it and runs nothing")
    func cooledHook() throws {
        let conninfo = try Postgres.server().database()
        let actions = """
            oops: { exec: ["false"], on: { failure: "quiet" } },
            quiet: { exec: ["true"], cooldown: "1h" },
            """
        let hosts = try FleetTests.fleet(2, actions: actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        #expect(try Self.trigger(hosts[0], "oops", detach: false).run?.phase == .failure)
        #expect(try Self.settled(db))
        let first = try #require(try Self.hookRuns(db).first?[0])
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [first]).first?[0] == "success")
        #expect(try Self.trigger(hosts[1], "oops", detach: false).run?.phase == .failure)
        #expect(try Self.settled(db))
        #expect(try Self.hookRuns(db).count == 1, "the cooled hook ran")
        #expect(try db.query("SELECT run_id, decision, host FROM triggers WHERE action = 'quiet'").rows == [[first, "cooled", "web-2"]])
    }

    @Test("fleet migration 11 gives each key the outcome of its last run that succeeded or failed, and none to a key with neither")
    func migration() throws {
        let db = try PGConnection(try Postgres.server().database())
        #expect(try FleetSchema.migrate(db, through: 10) == 10)
        for (id, key, phase) in [(1, "a", "success"), (2, "a", "failure"), (3, "a", "cancelled"), (4, "b", "success"), (5, "c", "cancelled")] {
            try db.query("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, host, incarnation)
                VALUES ($1, $2, $2, $3, 'reject', '{}', 1, 'web-1', 'web-1/1/old')
                """, [String(id), key, phase])
        }
        for key in ["a", "b", "c"] { try db.query("INSERT INTO keys (key) VALUES ($1)", [key]) }
        #expect(try FleetSchema.migrate(db, through: 11) == 11)
        #expect(try db.query("SELECT key, last_outcome FROM keys ORDER BY key").rows == [["a", "failure"], ["b", "success"], ["c", nil]])
    }
}
