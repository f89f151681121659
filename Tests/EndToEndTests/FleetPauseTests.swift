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
