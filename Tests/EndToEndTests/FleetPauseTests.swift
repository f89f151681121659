import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Pause across a fleet (issue 40, item 4; schema 17): a pause made on one host refuses the
/// triggers every host decides once it is answered, holds the runs queued on any host, ends
/// by a resume on another host, and is in every host's `history --events`; `pauseAfterFailures`
/// counts the action's failures on every host.
@Suite("End to end: pause across a fleet", .serialized)
struct FleetPauseTests {
    @Test("a pause on web-1 refuses web-2's next trigger at once; web-2 resumes it at once (reading the pauses first); both hosts list both events; each host's status follows the other's pause and resume")
    func pauseAndResume() throws {
        let hosts = try FleetTests.fleet(2, actions: #"deploy: { exec: ["true"] },"#)
        let paused = try hosts[0].baton("pause", "deploy", "--reason", "migrating db", "--for", "2h")
        #expect(paused.code == 0 && paused.stdout.hasPrefix("paused: deploy is paused by "), "\(paused.stdout)\(paused.stderr)")
        // Decided in web-2's trigger transaction, which reads the pause row: no waiting for its feed.
        let refused = try hosts[1].baton("run", "deploy")
        #expect(refused.code == 75 && refused.stderr.contains("more: migrating db"), "\(refused.stdout)\(refused.stderr)")
        // web-2's feed reads the pauses once a second: its resume reads them first, not "was not paused".
        let resumed = try hosts[1].baton("resume", "deploy")
        #expect(resumed.code == 0 && resumed.stdout.hasPrefix("resumed deploy (paused by "), "\(resumed.stdout)\(resumed.stderr)")
        #expect(try hosts[0].baton("run", "deploy").code == 0, "resumed on web-2, web-1 runs it")
        for host in hosts {
            let events = try host.baton("history", "--events", "--json").stdout
            let list = try JSONDecoder().decode([ActionEvent].self, from: Data(events.utf8))
            #expect(list.map(\.event) == [.resumed, .paused] && list.last?.reason == "migrating db", "\(events)")
        }
        #expect(try FleetDebounceTests.until(30) { !(try hosts[0].baton("status", "deploy").stdout.contains("migrating db")) },
                "web-1's status follows the resume made on web-2")
        #expect(try hosts[1].baton("pause", "deploy", "--reason", "again").code == 0)
        #expect(try FleetDebounceTests.until(30) { try hosts[0].baton("status", "deploy").stdout.contains("again") },
                "web-1's status follows the pause made on web-2")
        let metrics = try hosts[0].baton("metrics").stdout
        #expect(metrics.contains("baton_action_paused{action=\"deploy\"} 1"), "\(metrics)")
        for host in hosts { host.stop() }
    }

    @Test("a pause on web-1 while web-2's follow-up waits: the key frees and the run stays queued; resumed on web-1, web-2 starts it")
    func queuedRunHeld() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: FleetTests.gated(gate, policy: "queue"), conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let first = try #require(try FleetTests.trigger(hosts[0], "gated").run?.id)
        let second = try #require(try FleetTests.trigger(hosts[1], "gated").run?.id)
        #expect(try hosts[0].baton("pause", "gated", "--reason", "hold on").code == 0)
        gate.release()
        #expect(try FleetTests.wait(hosts[0], run: first)?.phase == .success)
        // The key is the follow-up's now; web-2 looks for what may start on each tick of its
        // feed (the end's NOTIFY, and once a second): three ticks at least pass in 2.5 s.
        usleep(2_500_000)
        let phase = { try db.query("SELECT phase FROM runs WHERE id = $1", [String(second)]).first?[0] ?? nil }
        #expect(try phase() == "queued", "a paused action's run does not start on any host")
        #expect(try hosts[0].baton("resume", "gated").code == 0)
        gate.release()
        #expect(try FleetTests.wait(hosts[1], run: second)?.phase == .success)
        for host in hosts { host.stop() }
    }

    @Test("pauseAfterFailures counts every host's failures: two on web-1 and one on web-2 pause the action for both")
    func afterFailuresAcrossHosts() throws {
        let hosts = try FleetTests.fleet(2, actions: #"flaky: { exec: ["false"], pauseAfterFailures: 3 },"#)
        for host in [hosts[0], hosts[1], hosts[0]] { #expect(try host.baton("run", "flaky").code == 1) }
        let refused = try hosts[1].baton("run", "flaky")
        #expect(refused.code == 75 && refused.stderr.contains("paused by pauseAfterFailures until resumed: 3 failures in a row (the last, run 3"),
                "\(refused.stdout)\(refused.stderr)")
        #expect(try hosts[0].baton("run", "flaky").code == 75)
        let events = try hosts[1].baton("history", "--events").stdout
        #expect(events.contains("pauseAfterFailures") && events.contains("3 failures in a row"), "\(events)")
        for host in hosts { host.stop() }
    }
}
