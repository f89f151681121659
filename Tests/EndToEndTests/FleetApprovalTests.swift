import BatonCore
import BatonFleet
import Foundation
import Testing

/// Approvals across a fleet (issue 40, item 5; schema 20): a run triggered on web-1 waits in the
/// database; an approver on web-2 decides it once, and it runs once, on its owner's host; two
/// hosts deciding at once make one decision; a deny ends it cancelled; its timeout is decided
/// once whichever host's tick sees it; a host SIGKILLed while its run waits leaves the wait to
/// the host that takes the run over. Needs root (it adds a group and two users).
@Suite("End to end: approvals across a fleet", .serialized, .offPool)
struct FleetApprovalTests {
    typealias Team = ApprovalEndToEndTests.Team

    static func fleet(_ team: Team, marker: String, timeout: String = "1h", lease: String = "15s", conninfo: String) throws -> [Daemon] {
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["sh", "-c", "echo ref=$BATON_PARAM_REF >> \(marker)"], params: { ref: {} },
                      approve: { by: ["group:\(team.group)"], timeout: "\(timeout)" } },
            \(FleetBarrier.action)
            """, lease: lease, conninfo: conninfo,
            settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        for host in hosts { chmod(host.directory, 0o755) }
        return hosts
    }

    /// What two callers at once were answered, in the order they were.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var outputs: [Output] = []
        func add(_ output: Output) { lock.withLock { outputs.append(output) } }
        var all: [Output] { lock.withLock { outputs } }
    }

    static func lines(_ marker: String) -> [String] {
        ((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test("ann triggers on web-1; web-2 lists it for ben, not for ann; ann's own approve on web-2 is refused; ben approves on web-2 and it runs once with ann's params; a second decision on web-1 names the first")
    func approvedElsewhere() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(team, marker: marker, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let triggered = try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=v2", "--detach", "--json")
        let run = try ApprovalEndToEndTests.runID(triggered)
        #expect(triggered.stdout.contains(#""approval" : {"#) && triggered.stdout.contains("\"group:\(team.group)\""),
                "the answer says what it waits for: \(triggered.stdout)")
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [run]).first?[0] == "queued")
        let listed = try team.baton(team.ben, hosts[1], "approvals")
        #expect(listed.stdout.contains("run \(run)  deploy  ref=v2"), "\(listed.stdout)\(listed.stderr)")
        #expect(try team.baton(team.ann, hosts[1], "approvals").stdout == "nothing waits for your approval\n", "her own run is not hers to approve")
        let own = try team.baton(team.ann, hosts[1], "approve", run)
        #expect(own.code == 77 && own.stderr.contains("triggered run \(run) of deploy and may not approve it"), "\(own.stderr)")
        // Every host's status says what it waits for (read with its feed's refresh, once a second).
        for host in hosts {
            try Eventually.value("\(host.socket)'s status says deploy waits for group:\(team.group)'s approval", { try host.baton("status", "deploy").stdout }) {
                $0.contains("waiting for approval by group:\(team.group)")
            }
        }
        // Waiting: its host has looked for what may start since, and every feed has delivered it; none started it.
        try FleetBarrier.pass(hosts)
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [run]).first?[0] == "queued", "no host starts a waiting run")
        let yes = try team.baton(team.ben, hosts[1], "approve", run)
        #expect(yes.code == 0, "\(yes.stdout)\(yes.stderr)")
        #expect(try hosts[1].baton("wait", run).code == 0)
        #expect(Self.lines(marker) == ["ref=v2"], "ran once, with ann's params")
        let again = try team.baton(team.ben, hosts[0], "deny", run)
        #expect(again.code != 0 && again.stderr.contains("was decided already: approved by \(team.ben)"), "\(again.stderr)")
        #expect(try db.query("SELECT verdict, decided_by FROM approvals WHERE run_id = $1", [run]).first == ["approved", team.ben])
        for host in hosts {
            let show = try host.baton("show", run).stdout
            #expect(show.contains("approval: approved by \(team.ben) at "), "every host's show tells the decision: \(show)")
        }
    }

    @Test("ben approves on web-1 and denies on web-2 at once: one decision; the other is told it")
    func oneDecision() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(team, marker: marker, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        for round in 0..<5 {
            let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[round % 2], "run", "deploy", "-p", "ref=r\(round)",
                                                                    "--detach", "--json"))
            let answers = Answers()
            let (ben, sockets) = (team.ben, hosts.map(\.socket))
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let output = try? execute("/usr/bin/setpriv", ["--reuid=\(ben)", "--regid=\(ben)", "--init-groups", Binaries.baton,
                                                               "--socket", sockets[index], index == 0 ? "approve" : "deny", run])
                if let output { answers.add(output) }
            }
            let outputs = answers.all
            #expect(outputs.count == 2 && outputs.filter { $0.code == 0 }.count == 1, "\(outputs.map { "\($0.code) \($0.stderr)" })")
            #expect(outputs.contains { $0.stderr.contains("was decided already: ") }, "\(outputs.map(\.stderr))")
            let ended = try #require(try FleetTests.wait(hosts[0], run: Int64(run)!))
            let db = try PGConnection(conninfo)
            let verdict = try db.query("SELECT verdict FROM approvals WHERE run_id = $1", [run]).first?[0]
            #expect(ended.phase == (verdict == "approved" ? .success : .cancelled), "\(String(describing: verdict)) \(ended)")
        }
        #expect(Set(Self.lines(marker)).count == Self.lines(marker).count, "no approved run ran twice: \(Self.lines(marker))")
    }

    @Test("ben denies on web-2 with a reason: ann's run on web-1 ends cancelled, denied by ben, and the key is free for the next")
    func denied() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let hosts = try Self.fleet(team, marker: marker, conninfo: try Postgres.server().database())
        defer { for host in hosts { host.stop() } }
        let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=v3", "--detach", "--json"))
        let no = try team.baton(team.ben, hosts[1], "deny", run, "--reason", "not today")
        #expect(no.code == 0, "\(no.stdout)\(no.stderr)")
        let ended = try #require(try FleetTests.wait(hosts[0], run: Int64(run)!))
        #expect(ended.phase == .cancelled && ended.error == "denied by \(team.ben): not today", "\(ended)")
        #expect(Self.lines(marker).isEmpty, "a denied run never starts")
        let late = try team.baton(team.ben, hosts[0], "approve", run)
        #expect(late.code == 2 && late.stderr.contains("run \(run) of deploy was decided already: denied by \(team.ben): not today"),
                "exit \(late.code): \(late.stderr)")
        let next = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[1], "run", "deploy", "-p", "ref=v4", "--detach", "--json"))
        #expect(next != run, "the key was freed: a new run waits")
    }

    @Test("a 2 s timeout with two hosts: the run ends cancelled (approval timed out) once, decided by one host's tick")
    func timedOutOnce() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(team, marker: marker, timeout: "2s", conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=v5", "--detach", "--json"))
        let ended = try #require(try FleetTests.wait(hosts[1], run: Int64(run)!))
        #expect(ended.phase == .cancelled && ended.reason == "approval" && ended.error?.hasPrefix("approval timed out after 2") == true, "\(ended)")
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT verdict FROM approvals WHERE run_id = $1", [run]).first?[0] == "timed_out")
        #expect(try db.query("SELECT count(*) FROM transitions WHERE run_id = $1 AND to_phase = 'cancelled'", [run]).first?[0] == "1",
                "ended once")
        let late = try team.baton(team.ben, hosts[1], "approve", run)
        #expect(late.code != 0 && late.stderr.contains("was decided already: approval timed out"), "\(late.stderr)")
        #expect(Self.lines(marker).isEmpty)
    }

    @Test("web-1 is SIGKILLed while ann's run waits: web-2 takes the run over, still waiting; ben approves on web-2 and it runs there")
    func waitSurvivesCrash() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(team, marker: marker, lease: "2s", conninfo: conninfo)
        defer { hosts[1].stop() }
        let run = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=v6", "--detach", "--json"))
        hosts[0].crash()
        let db = try PGConnection(conninfo)
        try Eventually.until("web-2 took the waiting run over", within: 20) {
            try db.query("SELECT host FROM runs WHERE id = $1", [run]).first?[0] == "web-2"
        }
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [run]).first?[0] == "queued", "still waiting, not started")
        #expect(try team.baton(team.ben, hosts[1], "approvals").stdout.contains("run \(run)  deploy"))
        #expect(try team.baton(team.ben, hosts[1], "approve", run).code == 0)
        let ended = try #require(try FleetTests.wait(hosts[1], run: Int64(run)!))
        #expect(ended.phase == .success && ended.host == "web-2", "\(ended)")
        #expect(Self.lines(marker) == ["ref=v6"])
    }

    @Test("self-approval through a hook across hosts: ann's build on web-1 fires a gated deploy; on web-2 she may not approve it (77), ben may, and it runs with her params")
    func throughHook() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-approve-hook-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let hosts = try FleetTests.fleet(2, actions: """
            build: { exec: ["true"], params: { ref: {} }, on: { success: "deploy" } },
            deploy: { exec: ["sh", "-c", "echo ref=$BATON_HOOK_PARAM_REF >> \(marker)"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """, settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        for host in hosts { chmod(host.directory, 0o755) }
        defer { for host in hosts { host.stop() } }
        let build = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "build", "-p", "ref=evil", "--detach", "--json"))
        let built = try hosts[0].baton("wait", build)
        #expect(built.code == 0, "\(built.stdout)\(built.stderr)\(hosts[0].stderr.split(separator: "\n").filter { $0.contains("rror") || $0.contains(" at /work") }.prefix(12).joined(separator: "\n"))")
        let listed = try Eventually.value("ben's approvals on web-2 list deploy", { try team.baton(team.ben, hosts[1], "approvals").stdout }) {
            $0.contains("  deploy")
        }
        let deploy = try #require(listed.firstMatch(of: /run (\d+)  deploy/).map { String($0.1) }, "\(listed)")
        #expect(try team.baton(team.ann, hosts[1], "approvals").stdout == "nothing waits for your approval\n")
        let own = try team.baton(team.ann, hosts[1], "approve", deploy)
        #expect(own.code == 77 && own.stderr.contains("may not approve it"), "\(own.stderr)")
        #expect(try team.baton(team.ben, hosts[1], "approve", deploy).code == 0)
        #expect(try hosts[1].baton("wait", deploy).code == 0)
        #expect(Self.lines(marker) == ["ref=evil"])
    }

    @Test("queue: a follow-up approved on web-2 while the holder runs starts when the holder ends; one not approved stays queued after the end, holding the key")
    func followUpAfterEnd() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" }, policy: "queue", params: { ref: {} },
                      approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            \(FleetBarrier.action)
            """, conninfo: conninfo, settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        for host in hosts { chmod(host.directory, 0o755) }
        defer { for host in hosts { host.stop() } }
        let trigger = { (ref: String) in
            try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "-p", "ref=\(ref)", "--detach", "--json"))
        }
        let first = try trigger("a")
        #expect(try team.baton(team.ben, hosts[1], "approve", first).code == 0)
        #expect(try FleetTests().waitUntilPhase(hosts[0], Int64(first)!, .loading))
        let second = try trigger("b")
        #expect(second != first)
        #expect(try team.baton(team.ben, hosts[1], "approve", second).code == 0, "approved while the holder runs")
        gate.release()
        #expect(try FleetTests.wait(hosts[0], run: Int64(first)!)?.phase == .success)
        #expect(try FleetTests().waitUntilPhase(hosts[0], Int64(second)!, .loading), "the approved follow-up starts after the holder's end")
        let third = try trigger("c")
        gate.release()
        #expect(try FleetTests.wait(hosts[0], run: Int64(second)!)?.phase == .success)
        // The key is the third's now: web-1 has looked for what may start since, and has not started it.
        try FleetBarrier.pass(hosts)
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [third]).first?[0] == "queued", "not approved: not started after the end")
        #expect(try team.baton(team.ben, hosts[1], "deny", third, "--reason", "enough").code == 0)
        #expect(try FleetTests.wait(hosts[0], run: Int64(third)!)?.phase == .cancelled)
    }
}
