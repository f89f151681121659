import BatonCore
import Foundation
import Testing

/// Approvals with the real binaries (issue 40, item 5): ann triggers a run of an action with
/// `approve`, her own approve is refused (exit 77), ben (of the approvers' group) approves and it
/// runs with the params ann gave; a deny ends a run cancelled with ben's reason; a short timeout
/// cancels one; a restart keeps a waiting run waiting. Waits are `baton wait` (the run's event
/// stream), never sleeps. Needs root (it adds a group and two users).
@Suite("End to end: approvals", .serialized, .offPool)
struct ApprovalEndToEndTests {
    /// A group and two users made for one test, both in the group (approvers), removed after.
    final class Team {
        let suffix = String(UUID().uuidString.prefix(5)).lowercased()
        var group: String { "bops" + suffix }
        var ann: String { "bann" + suffix }
        var ben: String { "bben" + suffix }

        init() throws {
            try #require(execute("/usr/sbin/groupadd", [group]).code == 0, "cannot add group \(group)")
            try #require(execute("/usr/sbin/useradd", ["--no-create-home", "--shell", "/bin/sh", "-G", group, ann]).code == 0)
            try #require(execute("/usr/sbin/useradd", ["--no-create-home", "--shell", "/bin/sh", "-G", group, ben]).code == 0)
        }

        /// Runs `baton` as `user` (its own gid and its groups from the user database).
        func baton(_ user: String, _ daemon: Daemon, _ arguments: String...) throws -> Output {
            try execute("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--init-groups", Binaries.baton, "--socket", daemon.socket]
                + arguments)
        }

        deinit {
            for user in [ann, ben] { _ = try? execute("/usr/sbin/userdel", [user]) }
            _ = try? execute("/usr/sbin/groupdel", [group])
        }
    }

    static func config(_ team: Team, marker: String, timeout: String = "1h") -> String {
        """
        {
          requireUser: false,
          socketMode: "0666",
          allow: { trigger: { users: ["*"] } },
          actions: {
            deploy: { exec: ["sh", "-c", "echo ref=$BATON_PARAM_REF > \(marker)"], params: { ref: {} },
                      approve: { by: ["group:\(team.group)"], timeout: "\(timeout)" } },
          },
        }
        """
    }

    /// The run id a detached `baton run --json` printed.
    static func runID(_ output: Output) throws -> String {
        let object = try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let run = (object?["run"] as? [String: Any])?["id"] as? Int
        return "\(try #require(run, "exit \(output.code): \(output.stdout)\(output.stderr)"))"
    }

    @Test("ann triggers; her own approve is refused (77); ben approves and the run succeeds with ann's params; a second decision is refused")
    func approved() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-approve-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let daemon = try Daemon(config: Self.config(team, marker: marker))
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "-p", "ref=v2", "--detach", "--json"))
        let status = try daemon.baton("status", "deploy")
        #expect(status.stdout.contains("queued (run \(run)) waiting for approval by group:\(team.group) (until "), "\(status.stdout)")
        let listed = try team.baton(team.ben, daemon, "approvals")
        #expect(listed.stdout.contains("run \(run)  deploy  ref=v2  by \(team.ann)"), "\(listed.stdout)\(listed.stderr)")
        #expect(try team.baton(team.ann, daemon, "approvals").stdout == "nothing waits for your approval\n", "her own run is not hers to approve")
        let own = try team.baton(team.ann, daemon, "approve", run)
        #expect(own.code == 77 && own.stderr.contains("\(team.ann) triggered run \(run) of deploy and may not approve it"), "\(own.stderr)")
        let root = try daemon.baton("approve", run)
        #expect(root.code == 77 && root.stderr.contains("approvals are by group:\(team.group)"), "root is no approver unless listed: \(root.stderr)")
        let yes = try team.baton(team.ben, daemon, "approve", run)
        #expect(yes.code == 0, "\(yes.stdout)\(yes.stderr)")
        #expect(try daemon.baton("wait", run).code == 0)
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "ref=v2\n")
        let again = try team.baton(team.ben, daemon, "deny", run)
        #expect(again.code == 2 && again.stderr.contains("run \(run) of deploy was decided already: approved by \(team.ben)"), "exit \(again.code): \(again.stderr)")
        let show = try daemon.baton("show", run)
        #expect(show.stdout.contains("approval: approved by \(team.ben) at "), "\(show.stdout)")
    }

    @Test("self-approval through a hook: ann's build fires a gated deploy; she is not asked and may not approve it (77); ben sees what made it and approves")
    func throughHook() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-approve-hook-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let daemon = try Daemon(config: """
            {
              requireUser: false,
              socketMode: "0666",
              allow: { trigger: { users: ["*"] } },
              actions: {
                build: { exec: ["true"], params: { ref: {} }, on: { success: "deploy" } },
                deploy: { exec: ["sh", "-c", "echo ref=$BATON_HOOK_PARAM_REF > \(marker)"],
                          approve: { by: ["group:\(team.group)"], timeout: "1h" } },
              },
            }
            """)
        chmod(daemon.directory, 0o755)
        let build = try Self.runID(try team.baton(team.ann, daemon, "run", "build", "-p", "ref=evil", "--detach", "--json"))
        #expect(try daemon.baton("wait", build).code == 0)
        let listed = try team.baton(team.ben, daemon, "approvals").stdout
        let deploy = try #require(listed.firstMatch(of: /run (\d+)  deploy/).map { String($0.1) }, "\(listed)")
        #expect(listed.contains("(the success hook of build run \(build))"), "\(listed)")
        #expect(listed.contains("\n  from build run \(build)  ref=evil  by \(team.ann) (uid "),
                "the approver sees the run that fired it, with its params and who triggered it: \(listed)")
        #expect(try team.baton(team.ann, daemon, "approvals").stdout == "nothing waits for your approval\n")
        let own = try team.baton(team.ann, daemon, "approve", deploy)
        #expect(own.code == 77 && own.stderr.contains("\(team.ann) triggered the run that made run \(deploy) of deploy"), "\(own.stderr)")
        #expect(try team.baton(team.ben, daemon, "approve", deploy).code == 0)
        #expect(try daemon.baton("wait", deploy).code == 0)
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "ref=evil\n")
    }

    @Test("an approver who may not read the action is told nothing of its run: no run N, as for a run that does not exist")
    func unreadable() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let daemon = try Daemon(config: """
            {
              requireUser: false,
              socketMode: "0666",
              allow: { trigger: { users: ["*"] } },
              actions: {
                deploy: { exec: ["true"], params: { ref: {} }, allow: { read: { users: ["\(team.ann)"] } },
                          approve: { by: ["group:\(team.group)"], timeout: "1h" } },
              },
            }
            """)
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "-p", "ref=v6", "--detach", "--json"))
        #expect(try team.baton(team.ben, daemon, "approvals").stdout == "nothing waits for your approval\n", "not offered to one who may not read it")
        for op in ["approve", "deny"] {
            let told = try team.baton(team.ben, daemon, op, run)
            #expect(told.code == 2 && told.stderr.contains("no run \(run)") && !told.stderr.contains("deploy"), "\(op): exit \(told.code): \(told.stderr)")
        }
        #expect(try daemon.baton("cancel", run).code == 0)
        let ended = try team.baton(team.ben, daemon, "approve", run)
        #expect(ended.code == 2 && ended.stderr.contains("no run \(run)"), "after its end: \(ended.stderr)")
    }

    @Test("ben denies with a reason: the run ends cancelled, never started, and show says who and why")
    func denied() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-deny-\(UUID().uuidString)"
        let daemon = try Daemon(config: Self.config(team, marker: marker))
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "-p", "ref=v3", "--detach", "--json"))
        let no = try team.baton(team.ben, daemon, "deny", run, "--reason", "not on a Friday")
        #expect(no.code == 0 && no.stdout.contains("denied by \(team.ben): not on a Friday"), "\(no.stdout)\(no.stderr)")
        let waited = try daemon.baton("wait", run)
        #expect(waited.code == 3, "\(waited.stdout)\(waited.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "a denied run never starts")
        let show = try daemon.baton("show", run)
        #expect(show.stdout.contains("error: denied by \(team.ben): not on a Friday"), "\(show.stdout)")
        #expect(show.stdout.contains("approval: denied by \(team.ben) at "), "\(show.stdout)")
    }

    @Test("a reload that removes approve: ann's waiting run is waived (show says so) and runs, as on a restart and on a fleet (audit D5); a reload that also changes the command leaves a run waiting", arguments: [false, true])
    func waivedOnReload(commandChanged: Bool) throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-waive-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let daemon = try Daemon(config: Self.config(team, marker: marker))
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "-p", "ref=v5", "--detach", "--json"))
        let config = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
        var without = config.replacing(/,\s*approve: \{[^}]*\}/, with: "")
        if commandChanged { without = without.replacingOccurrences(of: "echo ref=", with: "echo changed ref=") }
        #expect(without != config)
        try without.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let reloaded = try daemon.baton("reload")
        #expect(reloaded.code == 0, "\(reloaded.stderr)")
        if commandChanged {
            // Still waiting: approved, it runs the command it was triggered with.
            let waiting = try daemon.baton("show", run).stdout
            #expect(waiting.contains("waiting for approval by group:"), "\(waiting)")
            #expect(try team.baton(team.ben, daemon, "approve", run).code == 0)
        }
        #expect(try execute(Binaries.baton, ["--socket", daemon.socket, "wait", run], within: 60).code == 0)
        #expect((try? String(contentsOfFile: marker, encoding: .utf8)) == "ref=v5\n")
        let show = try daemon.baton("show", run).stdout
        let decided = commandChanged ? "approved by \(team.ben) at " : "approval waived: the action's approve was removed from the config at "
        #expect(show.contains(decided), "\(show)")
    }

    @Test("a reload that removes approve from deploy and from the build it needs: deploy is waived, its build is made waived too (no wait the reload gave up), and both run, build first (review s35 M1)")
    func waivedWithItsNeed() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-waive-needs-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let approve = #"approve: { by: ["group:\#(team.group)"], timeout: "1h" }"#
        let daemon = try Daemon(config: """
            { requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } }, actions: {
                build: { exec: ["sh", "-c", "echo build >> \(marker)"], \(approve) },
                deploy: { exec: ["sh", "-c", "echo deploy >> \(marker)"], needs: ["build"], \(approve) },
            } }
            """)
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "--detach", "--json"))
        let config = try String(contentsOfFile: daemon.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: ", " + approve, with: "").write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let reloaded = try daemon.baton("reload")
        #expect(reloaded.code == 0, "\(reloaded.stderr)")
        // Bounded: a wait the reload did not give up would hold `wait` for the approval's hour.
        #expect(try execute(Binaries.baton, ["--socket", daemon.socket, "wait", run], within: 60).code == 0)
        #expect(((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "") == "build\ndeploy\n")
        #expect(try team.baton(team.ann, daemon, "approvals").stdout == "nothing waits for your approval\n")
    }

    @Test("undecided at its timeout, the run ends cancelled: approval timed out")
    func timedOut() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let daemon = try Daemon(config: Self.config(team, marker: "/dev/null", timeout: "1s"))
        chmod(daemon.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, daemon, "run", "deploy", "-p", "ref=v4", "--detach", "--json"))
        let waited = try daemon.baton("wait", run)
        #expect(waited.code == 3, "\(waited.stdout)\(waited.stderr)")
        #expect(try daemon.baton("show", run).stdout.contains("error: approval timed out after 1.0s"))
    }

    @Test("self-approval through a hook across a restart: the origin is kept with the hook's run, so ann's approve is still refused (77)")
    func throughHookAcrossRestart() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let config = """
            {
              requireUser: false,
              socketMode: "0666",
              allow: { trigger: { users: ["*"] } },
              actions: {
                build: { exec: ["true"], on: { success: "deploy" } },
                deploy: { exec: ["true"], approve: { by: ["group:\(team.group)"], timeout: "1h" } },
              },
            }
            """
        let first = try Daemon(config: config)
        chmod(first.directory, 0o755)
        let build = try Self.runID(try team.baton(team.ann, first, "run", "build", "--detach", "--json"))
        #expect(try first.baton("wait", build).code == 0)
        let listed = try team.baton(team.ben, first, "approvals").stdout
        let deploy = try #require(listed.firstMatch(of: /run (\d+)  deploy/).map { String($0.1) }, "\(listed)")
        first.stop()
        let second = try Daemon(config: config, reusing: first)
        let own = try team.baton(team.ann, second, "approve", deploy)
        #expect(own.code == 77 && own.stderr.contains("\(team.ann) triggered the run that made run \(deploy)"),
                "the origin survives the restart: \(own.code) \(own.stderr)")
        let denied = try second.baton("history", "--denied").stdout
        #expect(denied.contains("approve of run \(deploy)"),
                "the refused approve is recorded with the refused requests: \(denied)")
        #expect(try team.baton(team.ann, second, "approvals").stdout == "nothing waits for your approval\n")
        #expect(try team.baton(team.ben, second, "approve", deploy).code == 0)
        #expect(try second.baton("wait", deploy).code == 0)
    }

    @Test("on: { awaiting }: a hook action runs as the run begins to wait, told the event and the waiting run")
    func awaitingHook() throws {
        let marker = NSTemporaryDirectory() + "baton-awaiting-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let daemon = try Daemon(config: """
            {
              requireUser: false,
              actions: {
                deploy: { exec: ["true"], params: { ref: {} }, approve: { by: ["group:root"], timeout: "1h" }, on: { awaiting: "announce" } },
                announce: { exec: ["sh", "-c", "echo $BATON_HOOK_EVENT $BATON_HOOK_RUN_ID $BATON_HOOK_PARAM_REF > \(marker)"] },
              },
            }
            """)
        let deploy = try Self.runID(try daemon.baton("run", "deploy", "-p", "ref=v7", "--detach", "--json"))
        // The hook run is made in the waiting run's creation item: the next id.
        let announce = String(try #require(Int(deploy)) + 1)
        let waited = try daemon.baton("wait", announce)
        #expect(waited.code == 0, "\(waited.stdout)\(waited.stderr)")
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "awaiting \(deploy) v7\n")
        #expect(try daemon.baton("show", deploy).stdout.contains("waiting for approval by group:root"), "the run still waits")
    }

    @Test("a restart while a run waits: it waits again, and ben's approval then runs it")
    func restart() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try Team()
        let marker = NSTemporaryDirectory() + "baton-approve-restart-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let first = try Daemon(config: Self.config(team, marker: marker))
        chmod(first.directory, 0o755)
        let run = try Self.runID(try team.baton(team.ann, first, "run", "deploy", "-p", "ref=v5", "--detach", "--json"))
        first.stop()
        let second = try Daemon(config: Self.config(team, marker: marker), reusing: first)
        let show = try second.baton("show", run)
        #expect(show.stdout.contains("waiting for approval by group:\(team.group)"), "\(show.stdout)")
        #expect(try team.baton(team.ben, second, "approve", run).code == 0)
        #expect(try second.baton("wait", run).code == 0)
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "ref=v5\n")
    }
}
