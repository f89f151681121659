import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Pause over the socket with the real binaries: `baton pause` with a reason, a trigger refused
/// (exit 75) naming who, why and until when, recorded; `status` and `/metrics` say so; a restart
/// keeps the pause; `baton resume` lets the next trigger run; `pauseAfterFailures` pauses by itself.
@Suite("End to end: pause", .serialized, .offPool)
struct PauseEndToEndTests {
    static let config = """
        {
          requireUser: false,
          actions: {
            deploy: { exec: ["true"] },
            flaky: { exec: ["false"], pauseAfterFailures: 2 },
          },
        }
        """

    @Test("pause, a refused trigger, status and metrics, a restart that keeps it, resume")
    func pauseAndResume() throws {
        let first = try Daemon(config: Self.config)
        let paused = try first.baton("pause", "deploy", "--reason", "migrating db", "--for", "2h")
        #expect(paused.code == 0 && paused.stdout.hasPrefix("paused: deploy is paused by "), "\(paused.stdout)\(paused.stderr)")
        let refused = try first.baton("run", "deploy")
        #expect(refused.code == 75, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("deploy is paused by ") && refused.stderr.contains("more: migrating db"), "\(refused.stderr)")
        let answer = try PolicyTests.trigger(first, "deploy")
        #expect(answer.error?.code == .paused)
        let status = try first.baton("status", "deploy")
        #expect(status.stdout.contains("paused by ") && status.stdout.contains("migrating db"), "\(status.stdout)")
        let json = try first.baton("status", "--json").stdout
        let infos = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
        let pause = infos.first { $0["name"] as? String == "deploy" }?["paused"] as? [String: Any]
        #expect(pause?["reason"] as? String == "migrating db" && pause?["until"] is NSNumber, "\(json)")
        let metrics = try first.baton("metrics").stdout
        #expect(metrics.contains("baton_action_paused{action=\"deploy\"} 1") && metrics.contains("baton_action_paused{action=\"flaky\"} 0"),
                "\(metrics)")
        let denied = try first.baton("history", "deploy", "--format", "json").stdout
        #expect(denied == "[]\n" || denied.contains("[]"), "a refused trigger made no run: \(denied)")
        first.stop()
        let second = try Daemon(config: Self.config, reusing: first, name: "restarted")
        #expect(try second.baton("run", "deploy").code == 75, "the pause survives a restart")
        let resumed = try second.baton("resume", "deploy")
        #expect(resumed.code == 0 && resumed.stdout.hasPrefix("resumed deploy (paused by "), "\(resumed.stdout)\(resumed.stderr)")
        #expect(try second.baton("run", "deploy").code == 0)
        #expect(try second.baton("resume", "deploy").stdout == "deploy was not paused\n")
        // Both refusals were recorded, against no run, as paused.
        let connection = try Connection(path: second.database, readOnly: true)
        #expect(try connection.scalar("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'paused' AND run_id IS NULL")?.int64 == 3)
        #expect(try connection.scalar("SELECT group_concat(event) FROM (SELECT event FROM pause_events ORDER BY id)")?.string == "paused,resumed")
    }

    @Test("pause --hold: a trigger is queued, status says what holds it, a restart keeps both, resume starts it; the next is busy meanwhile")
    func held() throws {
        let first = try Daemon(config: Self.config)
        let paused = try first.baton("pause", "deploy", "--hold", "--reason", "migrating db")
        #expect(paused.code == 0 && paused.stdout.hasPrefix("paused: deploy is held by "), "\(paused.stdout)\(paused.stderr)")
        let queued = try first.baton("run", "deploy", "--detach")
        #expect(queued.code == 0, "not refused: \(queued.stdout)\(queued.stderr)")
        let busy = try first.baton("run", "deploy", "--detach")
        #expect(busy.code == 75 && busy.stderr.contains("run 1"), "single flight: the held run holds its key: \(busy.stderr)")
        let status = try first.baton("status", "deploy").stdout
        #expect(status.contains("queued (run 1) held by pause (") && status.contains(": migrating db) until resumed"), "\(status)")
        first.stop()
        let second = try Daemon(config: Self.config, reusing: first, name: "restarted")
        #expect(try second.baton("status", "deploy").stdout.contains("queued (run 1) held by pause ("), "the hold and its run survive a restart")
        #expect(try second.baton("resume", "deploy").code == 0)
        let waited = try second.baton("wait", "1")
        #expect(waited.code == 0, "the held run starts at the resume and succeeds: \(waited.stdout)\(waited.stderr)")
        let connection = try Connection(path: second.database, readOnly: true)
        #expect(try connection.scalar("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'paused'")?.int64 == 0)
    }

    @Test("pauseAfterFailures: the second failure in a row pauses the action by itself; the next trigger is refused")
    func afterFailures() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "flaky").code == 1)
        #expect(try daemon.baton("run", "flaky").code == 1)
        let refused = try daemon.baton("run", "flaky")
        #expect(refused.code == 75 && refused.stderr.contains("flaky is paused by pauseAfterFailures until resumed: 2 failures in a row"),
                "\(refused.stderr)")
    }

    @Test("pauseAfterFailures counts across a restart: a failure, a restart, a second failure pauses the action")
    func afterFailuresAcrossRestart() throws {
        let first = try Daemon(config: Self.config)
        #expect(try first.baton("run", "flaky").code == 1)
        first.stop()
        let second = try Daemon(config: Self.config, reusing: first, name: "restarted")
        #expect(try second.baton("run", "flaky").code == 1)
        let refused = try second.baton("run", "flaky")
        #expect(refused.code == 75 && refused.stderr.contains("2 failures in a row"), "\(refused.stdout)\(refused.stderr)")
    }

    @Test("pause needs a reason, and the pause right: a user without it is refused")
    func refusals() throws {
        let daemon = try Daemon(config: Self.config)
        let noReason = try daemon.baton("pause", "deploy")
        #expect(noReason.code == 2 && noReason.stderr.contains("--reason"), "\(noReason.stderr)")
        let unknown = try daemon.baton("pause", "nope", "--reason", "x")
        #expect(unknown.code == 2, "\(unknown.stderr)")
    }
}

/// `baton history --events`: every pause and resume, newest first, from batond and from the file.
@Suite("End to end: pause events", .offPool)
struct PauseEventsEndToEndTests {
    @Test("history --events lists the pauses and resumes, newest first, as a table and as JSON, with batond down too")
    func listed() throws {
        let daemon = try Daemon(config: PauseEndToEndTests.config)
        #expect(try daemon.baton("history", "--events").stdout == "no pauses or resumes\n")
        #expect(try daemon.baton("pause", "deploy", "--reason", "migrating db", "--for", "2h").code == 0)
        #expect(try daemon.baton("resume", "deploy").code == 0)
        #expect(try daemon.baton("run", "flaky").code == 1)
        #expect(try daemon.baton("run", "flaky").code == 1)
        let table = try daemon.baton("history", "--events", "--utc")
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.count == 4 && lines[0].hasPrefix("TIME"), "\(table.stdout)\(table.stderr)")
        #expect(lines.count == 4 && lines[1].contains("flaky") && lines[1].contains("paused") && lines[1].contains("pauseAfterFailures")
                && lines[1].contains("resumed by hand") && lines[1].contains("2 failures in a row"), "\(table.stdout)")
        #expect(lines.count == 4 && lines[2].contains("deploy") && lines[2].contains("resumed"), "\(table.stdout)")
        #expect(lines.count == 4 && lines[3].contains("deploy") && lines[3].contains("paused") && lines[3].contains("migrating db"), "\(table.stdout)")
        let json = try daemon.baton("history", "--events", "deploy", "--json").stdout
        let events = try JSONDecoder().decode([ActionEvent].self, from: Data(json.utf8))
        #expect(events.map(\.event) == [.resumed, .paused] && events.allSatisfy { $0.action == "deploy" }, "\(json)")
        #expect(events.last?.reason == "migrating db" && events.last?.until != nil && events.first?.until == nil)
        daemon.stop()
        let offline = try execute(Binaries.baton, ["history", "--events", "--database", daemon.database, "-n", "1", "--json"])
        let newest = try JSONDecoder().decode([ActionEvent].self, from: Data(offline.stdout.utf8))
        #expect(newest.map(\.action) == ["flaky"], "read from the file with batond down: \(offline.stdout)\(offline.stderr)")
    }
}

extension PauseEndToEndTests {
    /// A crash while a run of an action with `pauseAfterFailures: 1` is loading: the next start
    /// ends it `interrupted`, a failure like any end's, and pauses the action at once (on main
    /// before session 29 only the next failure after the restart did): the pause is durable, the
    /// run queued before the crash waits for it, a trigger is refused, a further restart keeps it.
    @Test("SIGKILL while a run loads, pauseAfterFailures: 1: the restart pauses the action, holds its queued run and refuses a trigger")
    func interruptedRunPauses() throws {
        let gate = try FifoGate()
        let config = """
            { requireUser: false, actions: {
                lost: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" }, policy: "queue",
                        survivesRestart: false, pauseAfterFailures: 1 },
            } }
            """
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "lost", "--detach").code == 0)
        #expect(try daemon.baton("run", "lost", "--detach").code == 0, "queued behind run 1")
        guard try Eventually.until("run 1 loading", {
            try execute("/usr/bin/sqlite3", [daemon.database, "SELECT phase FROM runs WHERE id = 1"]).stdout == "loading\n"
        }) else { return }
        daemon.crash()

        let again = try Daemon(config: config, reusing: daemon, name: "restarted")
        // Detached: where the restart made no pause (main before session 29), the run would wait
        // for run 2, which waits for `go`.
        let refused = try again.baton("run", "lost", "--detach")
        #expect(refused.code == 75
                && refused.stderr.contains("lost is paused by pauseAfterFailures until resumed: 1 failures in a row (the last, run 1"),
                "\(refused.stdout)\(refused.stderr)")
        let status = try again.baton("status", "lost").stdout
        #expect(status.contains("paused by pauseAfterFailures until resumed: 1 failures in a row (the last, run 1: batond stopped while the run "
                                + "was loading); 1 queued"), "\(status)")
        #expect(try execute("/usr/bin/sqlite3", [again.database, "SELECT phase FROM runs WHERE id = 2"]).stdout == "queued\n", "run 2 waits")
        again.stop()
        let third = try Daemon(config: config, reusing: again, name: "third")
        #expect(try third.baton("run", "lost", "--detach").code == 75, "the pause is durable")
        let connection = try Connection(path: third.database, readOnly: true)
        #expect(try connection.scalar("SELECT group_concat(event) FROM pause_events WHERE action = 'lost'")?.string == "paused",
                "one pause, made once")
        #expect(try third.baton("resume", "lost").code == 0)
        gate.release()
        #expect(try third.baton("wait", "2").code == 0, "the held run starts at the resume")
    }
}
