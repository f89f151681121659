import BatonCore
import BatonFleet
import Foundation
import Testing

/// The review's findings on approvals across a fleet (issue 40 item 5): read checked on the
/// database's row, the self rule followed up any number of hooks, no decision after the wait's
/// end, waits waived when a reload removes `approve`. Needs root (it adds a group and two users).
@Suite("End to end: approvals across a fleet, the review's findings", .serialized, .offPool)
struct FleetApprovalReviewTests {
    typealias Team = ApprovalEndToEndTests.Team

    /// Runs `baton ARGS` as `user` again and again until `deadline`, handing each answer to `each` as it comes.
    static func repeatedly(_ user: String, _ socket: String, _ args: [String], until deadline: Date, each: (Output) -> Void) {
        while Date() < deadline {
            if let output = try? execute("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--init-groups", Binaries.baton,
                                                             "--socket", socket] + args) {
                each(output)
            }
        }
    }

    @Test("ben may approve but not read deploy: his denies of ann's new run, sent on web-2 from before its creation on, are all unknown_run and name no action")
    func unreadableAtOnce() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["true"], params: { ref: {} }, allow: { read: { users: ["\(team.ann)"] } },
                      approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """, conninfo: conninfo, settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        for host in hosts { chmod(host.directory, 0o755) }
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        for round in 0..<4 {
            // The next run's id, denied by ben on web-2 while ann triggers on web-1: some land
            // after the commit and before web-2's feed has seen the run.
            let next = Int64(try db.query("SELECT coalesce(max(id), 0) + 1 FROM runs").first?[0] ?? "") ?? 1
            let (ben, socket) = (team.ben, hosts[1].socket)
            let answers = FleetApprovalTests.Answers()
            let (done, first) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            DispatchQueue.global().async {
                defer { done.signal(); first.signal() }
                Self.repeatedly(ben, socket, ["deny", String(next)], until: Date() + 1.5) { output in
                    answers.add(output)
                    first.signal()
                }
            }
            // ben's denies are answered (unknown_run) before ann's run is made.
            first.wait()
            let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=r\(round)", "--detach", "--json"))
            done.wait()
            #expect(run == String(next), "the id was foreseen")
            let outputs = answers.all
            #expect(!outputs.isEmpty)
            for output in outputs {
                #expect(output.code == 2 && output.stderr.contains("no run \(next)") && !output.stderr.contains("deploy"),
                        "round \(round): exit \(output.code): \(output.stdout)\(output.stderr)")
            }
            #expect(try db.query("SELECT verdict FROM approvals WHERE run_id = $1", [run]).first == [nil], "undecided")
            #expect(try hosts[0].baton("cancel", run).code == 0)
        }
    }

    @Test("ann triggers build, whose hook fires stage, whose hook fires a gated deploy: ann may not approve it (77), two hooks on")
    func selfThroughTwoHooks() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            build: { exec: ["true"], on: { success: "stage" } },
            stage: { exec: ["true"], on: { success: "deploy", chain: true } },
            deploy: { exec: ["true"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """, conninfo: conninfo, settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        for host in hosts { chmod(host.directory, 0o755) }
        defer { for host in hosts { host.stop() } }
        let build = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "build", "--detach", "--json"))
        #expect(try hosts[0].baton("wait", build).code == 0)
        let listed = try Eventually.value("""
            ben's approvals on web-2 list deploy; runs \((try? PGConnection(conninfo).query("SELECT id, action, phase, error, hook_run, trigger_uid FROM runs").rows) ?? []), \
            approvals \((try? PGConnection(conninfo).query("SELECT * FROM approvals").rows) ?? [])
            """, { try team.baton(team.ben, hosts[1], "approvals").stdout }) { $0.contains("  deploy") }
        let deploy = try #require(listed.firstMatch(of: /run (\d+)  deploy/).map { String($0.1) }, "\(listed)")
        #expect(try team.baton(team.ann, hosts[1], "approvals").stdout == "nothing waits for your approval\n")
        let own = try team.baton(team.ann, hosts[1], "approve", deploy)
        #expect(own.code == 77 && own.stderr.contains("may not approve it"), "exit \(own.code): \(own.stderr)")
        #expect(try team.baton(team.ben, hosts[1], "approve", deploy).code == 0)
        #expect(try hosts[1].baton("wait", deploy).code == 0)
        // Each run's definition is stored with it, the hooks' runs' too, once each (`FleetRunDefinitions.store`).
        #expect(try PGConnection(conninfo).query("SELECT name FROM revisions ORDER BY name").rows == [["build"], ["deploy"], ["stage"]])
    }

    @Test("a wait past its end (by the database's clock) is not listed, and an approve of it is not_waiting, approval timed out; the run ends cancelled")
    func pastDue() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-due-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try FleetApprovalTests.fleet(team, marker: marker, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=late", "--detach", "--json"))
        let db = try PGConnection(conninfo)
        // Its hour has passed, as the database tells time (a tick may end it first: either way it is not approved).
        #expect(try db.query("UPDATE approvals SET until = until - 7200000000 WHERE run_id = $1 RETURNING run_id", [run]).first == [run])
        let listed = try team.baton(team.ben, hosts[1], "approvals")
        #expect(!listed.stdout.contains("run \(run)"), "\(listed.stdout)")
        let late = try team.baton(team.ben, hosts[1], "approve", run)
        #expect(late.code == 2 && late.stderr.contains("run \(run) of deploy was decided already: approval timed out"), "exit \(late.code): \(late.stderr)")
        let ended = try #require(try FleetTests.wait(hosts[0], run: Int64(run)!))
        #expect(ended.phase == .cancelled && ended.error?.hasPrefix("approval timed out") == true, "\(ended)")
        #expect(try db.query("SELECT verdict FROM approvals WHERE run_id = $1", [run]).first == ["timed_out"])
        #expect(FleetApprovalTests.lines(marker).isEmpty, "never ran")
    }

    @Test("a reload that removes approve from deploy on both hosts: ann's waiting run is waived (recorded) and runs, the key freed")
    func waivedOnReload() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-waive-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try FleetApprovalTests.fleet(team, marker: marker, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=w1", "--detach", "--json"))
        for host in hosts {
            let config = try String(contentsOfFile: host.configPath, encoding: .utf8)
            let without = config.replacing(/,\s*approve: \{[^}]*\}/, with: "")
            #expect(without != config)
            try without.write(toFile: host.configPath, atomically: true, encoding: .utf8)
            let reloaded = try host.baton("reload")
            #expect(reloaded.code == 0, "\(reloaded.stderr)")
        }
        let ended = try #require(try FleetTests.wait(hosts[0], run: Int64(run)!))
        #expect(ended.phase == .success, "\(ended)")
        #expect(FleetApprovalTests.lines(marker) == ["ref=w1"])
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT verdict, reason FROM approvals WHERE run_id = $1", [run]).first
                == ["waived", "the action's approve was removed from the config"])
    }
}
