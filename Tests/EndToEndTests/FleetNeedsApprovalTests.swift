import BatonCore
import BatonFleet
import Foundation
import Testing

/// `needs` and `approve` together across a fleet: a run that waits for a person's yes asks its
/// needs only once approved (a denied run never ran them), and a needed run's approval keeps
/// the origin of the run that needs it, through a hook (no self-approval by the hook's causer).
/// Needs root (it adds a group and two users).
@Suite("End to end: needs and approvals across a fleet", .serialized, .offPool)
struct FleetNeedsApprovalTests {
    typealias Team = ApprovalEndToEndTests.Team

    static let settings = #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#

    static func fleet(_ team: Team, actions: String, conninfo: String) throws -> [Daemon] {
        let hosts = try FleetTests.fleet(2, actions: actions, conninfo: conninfo, settings: settings)
        for host in hosts { chmod(host.directory, 0o755) }
        return hosts
    }

    static func count(_ db: PGConnection, action: String) throws -> Int {
        Int(try db.query("SELECT count(*) FROM runs WHERE action = $1", [action]).first?[0] ?? "") ?? -1
    }

    @Test("deploy needs build and an approval: its needs wait for the yes (a probe's needs asked meanwhile); denied, build never ran; approved, build runs, then deploy")
    func approvalBeforeNeeds() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let hosts = try Self.fleet(team, actions: """
            build: { exec: ["true"] },
            noop: { exec: ["true"] },
            probe: { exec: ["true"], needs: ["noop"] },
            deploy: { exec: ["true"], needs: ["build"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        let denied = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "--detach", "--json"))
        // A later run with needs on the same host: once its needs are written, a tick read past deploy's run.
        let probe = try #require(try PolicyTests.trigger(hosts[0], "probe").run)
        #expect(try FleetNeedsTests.needed(db, probe.id).map(\.[0]) == ["noop"])
        #expect(try Self.count(db, action: "build") == 0, "deploy's needs were asked before its approval")
        #expect(try FleetNeedsTests.row(db, Int64(denied)!)[2] == "asking")
        #expect(try team.baton(team.ben, hosts[1], "deny", denied, "--reason", "no").code == 0)
        #expect(try FleetTests.wait(hosts[0], run: Int64(denied)!)?.phase == .cancelled)
        #expect(try Self.count(db, action: "build") == 0, "a denied run's needs ran")
        let approved = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "--detach", "--json"))
        #expect(try team.baton(team.ben, hosts[1], "approve", approved).code == 0)
        let ran = try #require(try FleetTests.wait(hosts[1], run: Int64(approved)!))
        #expect(ran.phase == .success, "\(ran)")
        let needed = try db.query("SELECT n.action, r.phase, r.ended_at FROM run_needs n JOIN runs r ON r.id = n.needed_run WHERE n.run_id = $1",
                                  [approved]).rows
        #expect(needed.map(\.[0]) == ["build"] && needed.first?[1] == "success", "\(needed)")
        #expect((ran.startedAt?.rawValue ?? 0) >= (needed.first?[2].flatMap { Int64($0) } ?? .max), "deploy started before build ended")
    }

    @Test("a reload that drops deploy's needs on both hosts while its run waits for its yes: approved, it still asks build first (its definition's needs, as one machine's run keeps its action's), then runs (review-fleetdefs14 M3); where the reload removed build too, the build it loaded before still runs first (review s35 M3)",
          arguments: [false, true])
    func needsOfTheDefinition(buildRemoved: Bool) throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let log = DebounceEndToEndTests.temporaryLog()
        defer { try? FileManager.default.removeItem(atPath: log) }
        let hosts = try Self.fleet(team, actions: """
            build: { exec: ["sh", "-c", "echo build >> \(log)"] },
            deploy: { exec: ["sh", "-c", "echo deploy >> \(log)"], needs: ["build"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        let id = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "--detach", "--json"))
        #expect(try FleetNeedsTests.row(db, Int64(id)!)[2] == "asking")
        for host in hosts {
            let text = try String(contentsOfFile: host.configPath, encoding: .utf8)
            var changed = text.replacingOccurrences(of: #"needs: ["build"], "#, with: "")
            if buildRemoved { changed = changed.replacing(/build: \{[^\n]*\n/, with: "") }
            #expect(changed != text)
            try changed.write(toFile: host.configPath, atomically: true, encoding: .utf8)
            let reloaded = try host.baton("reload")
            #expect(reloaded.code == 0, "\(reloaded.stderr)")
        }
        #expect(try team.baton(team.ben, hosts[1], "approve", id).code == 0)
        // Where the reload removed build too, each host keeps the build it loaded while the waiting
        // deploy's definition needs it (`keepLoaded`), as one machine's run keeps its needed action.
        let ran = try #require(try FleetTests.wait(hosts[0], run: Int64(id)!))
        #expect(ran.phase == .success, "\(ran)")
        #expect(try FleetNeedsTests.needed(db, Int64(id)!).map(\.[0]) == ["build"], "deploy ran without asking the build its definition needs")
        #expect(DebounceEndToEndTests.log(log) == ["build", "deploy"])
    }

    @Test("needs refused at their ask, not at the trigger (the need paused while the run waited for its yes): ship fails naming compile; deploy's need build is made as on one host (its own need refused then) and fails, and deploy with it (review-fleetneeds11 1)")
    func refusedAtAsk() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let approve = #"approve: { by: ["group:\#(team.group)"], timeout: "1h" }"#
        let hosts = try Self.fleet(team, actions: """
            compile: { exec: ["true"] },
            build: { exec: ["true"], needs: ["compile"] },
            deploy: { exec: ["true"], needs: ["build"], \(approve) },
            ship: { exec: ["true"], needs: ["compile"], \(approve) },
            """, conninfo: conninfo)
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        let deploy = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "deploy", "--detach", "--json"))
        let ship = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "ship", "--detach", "--json"))
        #expect(try hosts[1].baton("pause", "compile", "--reason", "new compiler").code == 0)
        for run in [deploy, ship] { #expect(try team.baton(team.ben, hosts[1], "approve", run).code == 0) }
        let shipped = try #require(try FleetTests.wait(hosts[0], run: Int64(ship)!))
        #expect(shipped.phase == .failure && (shipped.error ?? "").hasPrefix("needs compile: compile is paused by "), "\(shipped)")
        let deployed = try #require(try FleetTests.wait(hosts[1], run: Int64(deploy)!))
        #expect(deployed.phase == .failure && (deployed.error ?? "").hasPrefix("needs build: run "), "\(deployed)")
        let builds = try db.query("SELECT phase, error FROM runs WHERE action = 'build'").rows
        #expect(builds.count == 1 && builds.first?[0] == "failure" && (builds.first?[1] ?? nil)?.hasPrefix("needs compile: compile is paused") == true,
                "build's run: \(builds)")
    }

    @Test("ann's build fires ship (a hook's run, no caller) which needs gated (approve, self: false): gated's approval keeps ann as its origin; she may not approve it (77), ben may")
    func neededApprovalKeepsOrigin() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let (hosts, db, gated) = try Self.gatedAfterAnnsBuild(team, conninfo: conninfo, actions: """
            build: { exec: ["true"], on: { success: "ship" } },
            ship: { exec: ["true"], needs: ["gated"] },
            gated: { exec: ["true"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """)
        defer { for host in hosts { host.stop() } }
        let run = try #require(gated)
        let origin = try db.query("SELECT origin_uid FROM approvals WHERE run_id = $1", [run]).first?[0] ?? nil
        #expect(origin != nil, "gated's approval lost its origin behind the hook")
        try Self.onlyBenApproves(team, hosts[1], run: run)
        let ship = try #require(try db.query("SELECT id FROM runs WHERE action = 'ship'").first?[0].flatMap { Int64($0) })
        #expect(try FleetTests.wait(hosts[0], run: ship)?.phase == .success)
    }

    @Test("ann's build fires ship (a hook's run), which needs stage; stage's success fires gated (approve, self: false): gated keeps ann as its origin, she may not approve it (77), ben may (audit D3)")
    func hookNeedsHookKeepsOrigin() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let conninfo = try Postgres.server().database()
        let (hosts, _, gated) = try Self.gatedAfterAnnsBuild(team, conninfo: conninfo, actions: """
            build: { exec: ["true"], on: { success: "ship" } },
            ship: { exec: ["true"], needs: ["stage"] },
            stage: { exec: ["true"], on: { success: "gated" } },
            gated: { exec: ["true"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
            """)
        defer { for host in hosts { host.stop() } }
        guard let run = gated else { return }
        try Self.onlyBenApproves(team, hosts[1], run: run)
        #expect(try FleetTests.wait(hosts[0], run: Int64(run)!)?.phase == .success)
    }

    /// A fleet of `team` with `actions`, ann's `build` triggered on web-1 and waited for: the
    /// fleet, a connection to its database, and the id of the `gated` run its chain made (nil,
    /// recorded, when none came).
    static func gatedAfterAnnsBuild(_ team: Team, conninfo: String, actions: String) throws -> (hosts: [Daemon], db: PGConnection, run: String?) {
        let hosts = try Self.fleet(team, actions: actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let build = try ApprovalEndToEndTests.runID(try team.baton(team.ann, hosts[0], "run", "build", "--detach", "--json"))
        #expect(try hosts[0].baton("wait", build).code == 0)
        var gated: String?
        _ = try Eventually.until("build's chain made a gated run") {
            gated = try db.query("SELECT id FROM runs WHERE action = 'gated'").first?[0] ?? nil
            return gated != nil
        }
        return (hosts, db, gated)
    }

    /// ann, whose trigger the run came from, may not approve it (77); ben may.
    static func onlyBenApproves(_ team: Team, _ host: Daemon, run: String) throws {
        let own = try team.baton(team.ann, host, "approve", run)
        #expect(own.code == 77 && own.stderr.contains("may not approve it"), "exit \(own.code): \(own.stderr)")
        #expect(try team.baton(team.ben, host, "approve", run).code == 0)
    }

    @Test("fleet migration 26 fills the origin of the runs unfinished at the upgrade (their trigger's, else up their hooks and the runs that need them); finished runs keep none")
    func migrationFillsOrigins() throws {
        let db = try PGConnection(try Postgres.server().database())
        #expect(try FleetSchema.migrate(db, through: 25) == 25)
        // 1 loading, ann's (1001); 2 its hook's run; 3 a run 2 needs; 4 ended, ben's; 5 a schedule's; 6 approved, its row's origin 1003.
        let runs: [(id: Int, phase: String, uid: String?, hook: String?)] = [
            (1, "loading", "1001", nil), (2, "queued", nil, "1"), (3, "queued", nil, nil), (4, "success", "1002", nil),
            (5, "queued", nil, nil), (6, "queued", nil, nil),
        ]
        for run in runs {
            try db.query("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, host, incarnation, trigger_uid, hook_run)
                VALUES ($1, 'a', $2, $3, 'join', '{}', 1, 'web-1', 'web-1/1/old', $4, $5)
                """, [String(run.id), "a \(run.id)", run.phase, run.uid, run.hook])
        }
        try db.query("INSERT INTO run_needs (run_id, position, action, needed_run) VALUES (2, 0, 'a', 3)")
        try db.query("INSERT INTO approvals (run_id, action, approvers, origin_uid) VALUES (6, 'a', 'group:ops', 1003)")
        #expect(try FleetSchema.migrate(db) == FleetSchema.latestVersion)
        #expect(try db.query("SELECT id, origin_uid FROM runs ORDER BY id").rows == [
            ["1", "1001"], ["2", "1001"], ["3", "1001"], ["4", nil], ["5", nil], ["6", "1003"],
        ])
    }
}
