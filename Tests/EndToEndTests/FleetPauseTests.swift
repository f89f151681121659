import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Pause across a fleet (issue 40, item 4; schema 17): a pause made on one host refuses the
/// triggers every host decides once it is answered, holds the runs queued on any host, ends
/// by a resume on another host, and is in every host's `history --events`; `pauseAfterFailures`
/// counts the action's failures on every host.
@Suite("End to end: pause across a fleet", .serialized, .offPool)
struct FleetPauseTests {
    @Test("a pause on web-1 refuses web-2's next trigger at once; web-2 resumes it at once (reading the pauses first); both hosts list both events; each host's status follows the other's pause and resume")
    func pauseAndResume() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: #"deploy: { exec: ["true"] },"#, conninfo: conninfo)
        let paused = try hosts[0].baton("pause", "deploy", "--reason", "migrating db", "--for", "2h")
        #expect(paused.code == 0 && paused.stdout.hasPrefix("paused: deploy is paused by "), "\(paused.stdout)\(paused.stderr)")
        // Decided in web-2's trigger transaction, which reads the pause row: no waiting for its feed.
        let refused = try hosts[1].baton("run", "deploy")
        #expect(refused.code == 75 && refused.stderr.contains("more: migrating db"), "\(refused.stdout)\(refused.stderr)")
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'paused' AND run_id IS NULL").first?[0] == "1",
                "the refusal is recorded against no run")
        // web-2's feed reads the pauses once a second: its resume reads them first, not "was not paused".
        let resumed = try hosts[1].baton("resume", "deploy")
        #expect(resumed.code == 0 && resumed.stdout.hasPrefix("resumed deploy (paused by "), "\(resumed.stdout)\(resumed.stderr)")
        #expect(try hosts[0].baton("run", "deploy").code == 0, "resumed on web-2, web-1 runs it")
        for host in hosts {
            let events = try host.baton("history", "--events", "--json").stdout
            let list = try JSONDecoder().decode([ActionEvent].self, from: Data(events.utf8))
            #expect(list.map(\.event) == [.resumed, .paused] && list.last?.reason == "migrating db", "\(events)")
        }
        try Eventually.until("web-1's status follows the resume made on web-2") { !(try hosts[0].baton("status", "deploy").stdout.contains("migrating db")) }
        #expect(try hosts[1].baton("pause", "deploy", "--reason", "again").code == 0)
        try Eventually.until("web-1's status follows the pause made on web-2") { try hosts[0].baton("status", "deploy").stdout.contains("again") }
        let metrics = try hosts[0].baton("metrics").stdout
        #expect(metrics.contains("baton_action_paused{action=\"deploy\"} 1"), "\(metrics)")
        for host in hosts { host.stop() }
    }

    @Test("pause --hold on web-1: web-2's trigger is queued, not refused, and waits on every host; web-1's next is busy with it; resumed, it starts")
    func held() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: #"deploy: { exec: ["true"] },"# + FleetBarrier.action, conninfo: conninfo)
        let paused = try hosts[0].baton("pause", "deploy", "--hold", "--reason", "migrating db")
        #expect(paused.code == 0 && paused.stdout.hasPrefix("paused: deploy is held by "), "\(paused.stdout)\(paused.stderr)")
        let queued = try FleetTests.trigger(hosts[1], "deploy")
        let run = try #require(queued.run?.id, "queued, not refused: \(String(describing: queued.error))")
        let busy = try hosts[0].baton("run", "deploy", "--detach")
        #expect(busy.code == 75 && busy.stderr.contains("run \(run)"), "single flight across the fleet: \(busy.stderr)")
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'paused'").first?[0] == "0")
        // web-2 has looked for what may start since (`FleetBarrier`), and every feed has delivered the run.
        try FleetBarrier.pass(hosts, first: 1)
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [String(run)]).first?[0] == "queued", "a held run starts on no host")
        try Eventually.until("web-2's status says what holds its run") { try hosts[1].baton("status", "deploy").stdout.contains("held by pause (") }
        #expect(try hosts[0].baton("resume", "deploy").code == 0)
        #expect(try FleetTests.wait(hosts[1], run: run)?.phase == .success, "resumed on web-1, web-2 starts its held run")
        // Every host's history of pauses says it held (schema 25, `pause_events.hold`).
        let events = try hosts[1].baton("history", "--events").stdout
        #expect(events.contains("deploy  paused (hold)") && events.contains("deploy  resumed"), "\(events)")
        for host in hosts { host.stop() }
    }

    @Test("a pause on web-1 while web-2's follow-up waits: the key frees and the run stays queued; resumed on web-1, web-2 starts it")
    func queuedRunHeld() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: FleetTests.gated(gate, policy: "queue") + FleetBarrier.action, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let first = try #require(try FleetTests.trigger(hosts[0], "gated").run?.id)
        let second = try #require(try FleetTests.trigger(hosts[1], "gated").run?.id)
        #expect(try hosts[0].baton("pause", "gated", "--reason", "hold on").code == 0)
        gate.release()
        #expect(try FleetTests.wait(hosts[0], run: first)?.phase == .success)
        // The key is the follow-up's now; web-2 has looked for what may start since (`FleetBarrier`).
        try FleetBarrier.pass(hosts, first: 1)
        let phase = { try db.query("SELECT phase FROM runs WHERE id = $1", [String(second)]).first?[0] ?? nil }
        #expect(try phase() == "queued", "a paused action's run does not start on any host")
        #expect(try hosts[0].baton("resume", "gated").code == 0)
        gate.release()
        #expect(try FleetTests.wait(hosts[1], run: second)?.phase == .success)
        for host in hosts { host.stop() }
    }

    @Test("a pause for 2 s while web-2's follow-up waits: the key frees, the run stays queued until the pause ends by itself, then starts")
    func timedPauseEnds() throws {
        let gate = try FifoGate()
        let hosts = try FleetTests.fleet(2, actions: FleetTests.gated(gate, policy: "queue"))
        let first = try #require(try FleetTests.trigger(hosts[0], "gated").run?.id)
        let second = try #require(try FleetTests.trigger(hosts[1], "gated").run?.id)
        let pausedAt = Int64(Date().timeIntervalSince1970 * 1_000_000)
        #expect(try hosts[0].baton("pause", "gated", "--reason", "a moment", "--for", "2s").code == 0)
        gate.release()
        #expect(try FleetTests.wait(hosts[0], run: first)?.phase == .success)
        try Eventually.until("web-2's status shows the pause web-1 made") { try hosts[1].baton("status", "gated").stdout.contains("a moment") }
        gate.release()
        let ended = try FleetTests.wait(hosts[1], run: second)
        #expect(ended?.phase == .success)
        let started = try #require(ended?.startedAt).rawValue
        #expect(started >= pausedAt + 2_000_000, "started once the pause's time ran out: \(started - pausedAt) µs after the pause")
        for host in hosts { host.stop() }
    }

    @Test("a hook whose target is paused, decided in web-2's end transaction: refused, recorded against no run while the pause holds; fired once the pause's end (set to the database's clock, no waiting) has passed")
    func hookRefusedByPause() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["false"], on: { failure: "page" } },
            page: { exec: ["true"] },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        // An hour's pause: no run's speed decides whether it still holds when web-2's end is written.
        let now = try FleetDebounceTests.databaseNow(db)
        try db.query("INSERT INTO pauses (action, paused_by, reason, at, until) VALUES ('page', 'alice', 'pager storm', $1::bigint, $1::bigint + 3600000000)",
                     [String(now)])
        let records = { try db.query("SELECT decision, run_id, via FROM triggers WHERE action = 'page' ORDER BY id").rows }
        #expect(try hosts[1].baton("run", "deploy").code == 1)
        guard try Eventually.until("web-2's end transaction recorded the hook's refusal", { try !records().isEmpty }) else { return }
        let refused = try records()
        #expect(refused.count == 1 && refused[0][0] == "paused" && refused[0][1] == nil && refused[0][2]?.hasPrefix("the failure hook of deploy run") == true,
                "\(refused)")
        #expect(try db.query("SELECT count(*) FROM runs WHERE action = 'page'").first?[0] == "0", "a paused hook makes no run")
        // The pause's end moved to the database's clock now: the row stays, so the engine must compare
        // its end with the clock the next transaction reads (later: the end has passed) to fire the hook.
        try db.query("UPDATE pauses SET until = \(FleetPauseTests.databaseNow) WHERE action = 'page'")
        #expect(try hosts[0].baton("run", "deploy").code == 1)
        let made = { try db.query("SELECT id FROM runs WHERE action = 'page'").rows.compactMap { $0[0].flatMap { Int64($0) } } }
        guard try Eventually.until("web-1's end transaction fired the hook", { try !made().isEmpty }) else { return }
        let runs = try made()
        let refusals = try records().count
        #expect(runs.count == 1 && refusals == 1, "one hook run, no second refusal")
        #expect(try FleetTests.wait(hosts[0], run: runs[0])?.phase == .success)
        for host in hosts { host.stop() }
    }

    /// The database's clock in µs, as SQL (what `FleetCooldown.databaseNow` reads).
    static let databaseNow = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    @Test("pauseAfterFailures: 1 and a failure that ends while an operator's pause holds: counted, not paused over (the pause's end, who and why stay; one paused event); once that pause's end has passed (set to the database's clock), the next failure pauses")
    func failureWhilePaused() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            flaky: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null; exit 1"], env: { GATE: "\(gate.path)" }, pauseAfterFailures: 1 },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let phase = { (run: Int64) in try db.query("SELECT phase FROM runs WHERE id = $1", [String(run)]).first?[0] ?? nil }
        let first = try #require(try FleetTests.trigger(hosts[0], "flaky").run?.id)
        // Started before the pause (a pause holds a queued run), then paused on web-2 for an hour.
        guard try Eventually.until("web-1 started run \(first)", { try phase(first) != "queued" }) else { return }
        let paused = try hosts[1].baton("pause", "flaky", "--for", "1h", "--reason", "freeze")
        #expect(paused.code == 0, "\(paused.stdout)\(paused.stderr)")
        let pauseRow = { try db.query("SELECT paused_by, reason, at, until, hold FROM pauses WHERE action = 'flaky'").rows }
        let operators = try pauseRow()
        #expect(operators.count == 1 && operators[0][1] == "freeze" && operators[0][3] != nil, "\(operators)")
        gate.release()
        // The count is written in the transaction that writes the end.
        guard try Eventually.until("run \(first)'s failure committed", { try phase(first) == "failure" }) else { return }
        #expect(try pauseRow() == operators, "the operator's pause is kept as made, not replaced by pauseAfterFailures'")
        #expect(try db.query("SELECT failures FROM pause_streaks WHERE action = 'flaky'").first?[0] == "1", "counted while paused")
        let events = { try db.query("SELECT by_whom, until IS NULL FROM pause_events WHERE action = 'flaky' AND event = 'paused' ORDER BY id").rows }
        let once = try events()
        #expect(once.count == 1, "no second paused event: \(once)")
        // The operator's pause ends now by the database's clock (its row stays): the next failure pauses.
        try db.query("UPDATE pauses SET until = \(Self.databaseNow) WHERE action = 'flaky'")
        let second = try #require(try FleetTests.trigger(hosts[1], "flaky").run?.id, "the pause's end has passed: a trigger is taken")
        gate.release()
        guard try Eventually.until("run \(second)'s failure committed", { try phase(second) == "failure" }) else { return }
        let made = try pauseRow()
        #expect(made.count == 1 && made[0][0] == "pauseAfterFailures" && made[0][3] == nil, "\(made)")
        let twice = try events()
        #expect(twice.count == 2 && twice.last?[0] == "pauseAfterFailures", "\(twice)")
        for host in hosts { host.stop() }
    }

    @Test("pauseAfterFailures counts every host's ends: a success on either host starts the count again; three failures in a row over both hosts pause the action for both")
    func afterFailuresAcrossHosts() throws {
        let hosts = try FleetTests.fleet(2, actions: """
            flaky: { exec: ["sh", "-c", "exit $BATON_PARAM_CODE"], params: { code: {} }, pauseAfterFailures: 3 },
            """)
        let run = { (host: Int, code: String) in try hosts[host].baton("run", "flaky", "-p", "code=\(code)").code }
        #expect(try run(0, "1") == 1 && run(1, "1") == 1)
        #expect(try run(0, "0") == 0, "a success between")
        #expect(try run(1, "1") == 1 && run(0, "1") == 1)
        #expect(try run(1, "0") == 0, "two failures in a row since the success: not paused")
        #expect(try run(0, "1") == 1 && run(1, "1") == 1 && run(0, "1") == 1)
        let refused = try hosts[1].baton("run", "flaky", "-p", "code=0")
        #expect(refused.code == 75 && refused.stderr.contains("paused by pauseAfterFailures until resumed: 3 failures in a row (the last, run 9"),
                "\(refused.stdout)\(refused.stderr)")
        #expect(try run(0, "0") == 75)
        let events = try hosts[1].baton("history", "--events").stdout
        #expect(events.contains("pauseAfterFailures") && events.contains("3 failures in a row"), "\(events)")
        // A resume starts the count again: the next failure does not pause.
        #expect(try hosts[0].baton("resume", "flaky").code == 0)
        #expect(try run(1, "1") == 1 && run(0, "0") == 0)
        for host in hosts { host.stop() }
    }
}
