import BatonCore
import BatonIPC
import Foundation
import Testing

@Suite("End to end: who may press which button", .serialized, .offPool)
struct AccessTests {
    static let config = """
        {
          socketMode: "0666",
          allow: { trigger: { users: ["root"] }, cancel: { users: ["root"] } },
          actions: {
            open: { exec: ["true"], allow: { trigger: { users: ["*"] } } },
            guarded: { exec: ["sleep", "30"] },
            team: { exec: ["true"], allow: { trigger: { groups: ["users"] } } },
            secret: { exec: ["true"], allow: { read: { users: [] } } },
          },
        }
        """

    /// Runs `baton` as another user and group (the socket peer is then that uid and gid).
    static func batonAs(_ uid: String, group: String, _ daemon: Daemon, _ arguments: String...) throws -> Output {
        try execute("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(group)", "--clear-groups", Binaries.baton, "--socket", daemon.socket] + arguments)
    }

    @Test("peer credentials decide: forbidden names the permission and the user, is recorded, and root may always act")
    func permissions() throws {
        let daemon = try Daemon(config: Self.config)
        // The socket's directory must let nobody in.
        chmod(daemon.directory, 0o755)
        let nobody = { (arguments: [String]) throws -> Output in
            try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", daemon.socket] + arguments)
        }
        #expect(try nobody(["run", "open"]).code == 0)
        let trigger = try nobody(["run", "guarded"])
        #expect(trigger.code == 77)
        #expect(trigger.stderr.contains("uid 65534 (nobody) may not trigger guarded"), "\(trigger.stderr)")

        #expect(try daemon.baton("run", "guarded", "--detach").code == 0)   // root may
        let cancel = try nobody(["cancel", "guarded"])
        #expect(cancel.code == 77)
        #expect(cancel.stderr.contains("may not cancel guarded"))
        #expect(try nobody(["cancel", "2"]).code == 77)
        // --all skips the actions the caller may not cancel; refused on every one, it is refused.
        let all = try nobody(["cancel", "--all"])
        #expect(all.code == 77 && all.stderr.contains("may not cancel"), "\(all.stderr)")
        #expect(try daemon.baton("status", "--json").stdout.contains("\"loading\""))
        #expect(try nobody(["reload"]).code == 77)
        #expect(try nobody(["prune"]).code == 77)

        // Group rules use the peer's gid and its user's supplementary groups.
        #expect(try Self.batonAs("65534", group: "100", daemon, "run", "team").code == 0)
        #expect(try Self.batonAs("65534", group: "65534", daemon, "run", "team").code == 77)

        // Read: secret's runs are invisible to nobody, everything else is readable.
        #expect(try daemon.baton("run", "secret").code == 0)
        let history = try nobody(["history", "--json"])
        let actions = (try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]] ?? []).compactMap { $0["action"] as? String }
        #expect(Set(actions) == ["open", "guarded", "team"], "\(actions)")
        let secretRun = try #require(try daemon.baton("history", "secret", "--json").stdout.split(separator: "\"id\" : ").dropFirst().first
            .flatMap { Int($0.prefix { $0.isNumber }) })
        #expect(try nobody(["show", String(secretRun)]).code == 77)
        #expect(try nobody(["status"]).stdout.contains("secret") == false)
        #expect(try nobody(["stats"]).stdout.contains("secret") == false)

        // Every refused trigger, cancel and admin request is on record with who and what.
        let denied = try daemon.baton("history", "--denied", "--json")
        let records = try JSONSerialization.jsonObject(with: Data(denied.stdout.utf8)) as? [[String: Any]] ?? []
        let tried = records.map { "\($0["decision"] as? String ?? "") \($0["action"] as? String ?? "")" }
        for expected in ["denied trigger guarded", "denied cancel guarded", "denied admin ", "denied trigger team"] {
            #expect(tried.contains(expected), "\(tried)")
        }
        #expect(records.allSatisfy { ($0["peer"] as? [String: Any])?["uid"] as? Int == 65534 })
        #expect(try nobody(["history", "--denied"]).code == 77)
        #expect(try daemon.baton("cancel", "guarded").code == 0)
    }

    @Test("by default the socket file's group may trigger (as batond.socket makes it group baton); root's group is not enough")
    func socketGroupDefault() throws {
        let daemon = try Daemon(config: #"{ socketMode: "0666", actions: { a: { exec: ["true"] } } }"#)
        chmod(daemon.directory, 0o755)
        let asUsers = { try AccessTests.batonAs("65534", group: "100", daemon, "run", "a") }
        // The socket belongs to root's group: connecting works (mode 0666), triggering does not.
        let refused = try asUsers()
        #expect(refused.code == 77, "\(refused.stderr)")
        // Give the socket to group users, as a socket unit with SocketGroup= would: its members may
        // trigger once batond reads the socket's group again (at start and at each reload, never per request).
        #expect(chown(daemon.socket, 0, 100) == 0)
        #expect(try daemon.baton("reload").code == 0)
        #expect(try asUsers().code == 0)
        #expect(try AccessTests.batonAs("65534", group: "65534", daemon, "run", "a").code == 77)
    }

    @Test("an unknown user or group in allow is a config error naming the field")
    func unknownNames() throws {
        let file = NSTemporaryDirectory() + "baton-allow-\(UUID().uuidString).json5"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{ allow: { read: { groups: ["no-such-group-x"] } }, actions: { a: { exec: ["true"], allow: { trigger: { users: ["no-such-user-x"] } } } } }"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let check = try execute(Binaries.batond, ["--check-config", file])
        #expect(check.code == 1)
        #expect(check.stderr.contains("allow.read.groups: no group named \"no-such-group-x\""), "\(check.stderr)")
        #expect(check.stderr.contains("actions.a.allow.trigger.users: no user named \"no-such-user-x\""), "\(check.stderr)")
    }
}

@Suite("End to end: run as another user; no injection", .serialized, .offPool)
struct RunAsTests {
    @Test("user: nobody runs the process as nobody with its groups, a clean environment and the action's umask")
    func runAsNobody() throws {
        let daemon = try Daemon(config: """
            { actions: {
                who: { exec: ["sh", "-c", "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); echo home=$HOME user=$USER; umask; env | sort"],
                       user: "nobody", group: "users", umask: "0077", env: { EXTRA: "from-config" } },
                long: { exec: ["sh", "-c", "sleep 300 & wait"], user: "nobody", killGrace: "200ms" },
            } }
            """, environment: ["BATON_TEST_SECRET": "must-not-leak"])
        #expect(try daemon.baton("run", "who").code == 0)
        let output = try daemon.baton("show", "1", "--output").stdout
        #expect(output.contains("uid=65534 gid=100"), "\(output)")
        #expect(output.contains("home=/nonexistent user=nobody"))
        #expect(output.contains("0077"))
        #expect(output.contains("EXTRA=from-config"))
        #expect(output.contains("BATON_RUN_ID=1"))
        #expect(!output.contains("must-not-leak"))
        #expect(!output.contains("NOTIFY_SOCKET") && !output.contains("JOURNAL_STREAM"))

        // Cancel still reaches the whole group of a process that runs as another user.
        #expect(try daemon.baton("run", "long", "-d").stdout == "2\n")
        try daemon.waitForLog("run 2 long: queued → loading")
        #expect(try daemon.baton("cancel", "2").code == 0)
        #expect(try Client(path: daemon.socket).call(Request(op: .wait, run: 2)).run?.phase == .cancelled)
        let left = try execute("/usr/bin/pgrep", ["-u", "nobody", "-f", "sleep 300"])
        #expect(left.stdout.isEmpty, "nobody's sleep survived the cancel: \(left.stdout)")
    }

    @Test("shell metacharacters, newlines and NULs in params do nothing: the value arrives verbatim or is refused")
    func noInjection() throws {
        let marker = NSTemporaryDirectory() + "baton-pwned-\(UUID().uuidString)"
        let daemon = try Daemon(config: #"{ actions: { echo: { exec: ["sh", "-c", "printf '%s' \"$BATON_PARAM_TEXT\""], params: { text: {} } } } }"#)
        let nasty = "$(touch \(marker)); `touch \(marker)`; | touch \(marker) && touch \(marker) > /dev/null '\""
        #expect(try daemon.baton("run", "echo", "-p", "text=" + nasty).code == 0)
        #expect(try daemon.baton("show", "1", "--output").stdout == nasty)
        #expect(!FileManager.default.fileExists(atPath: marker))
        let newline = try Client(path: daemon.socket).call(Request(op: .trigger, action: "echo", params: ["text": "a\nb"]))
        #expect(newline.error?.code == .badRequest)
        #expect(newline.error?.message.contains("param text") == true)
        let nul = try Client(path: daemon.socket).call(Request(op: .trigger, action: "echo", params: ["text": "a\u{0}b"]))
        #expect(nul.error?.code == .badRequest)
        let name = try Client(path: daemon.socket).call(Request(op: .trigger, action: "echo", params: ["text; rm": "x"]))
        #expect(name.error?.code == .badRequest)
    }

    @Test("a user that does not exist, or user without root, is a config error naming the field")
    func badUser() throws {
        let file = NSTemporaryDirectory() + "baton-user-\(UUID().uuidString).json5"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try #"{ actions: { a: { exec: ["true"], user: "no-such-user-x" }, b: { exec: ["true"], group: "users" }, c: { exec: ["true"], umask: "999" } } }"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let check = try execute(Binaries.batond, ["--check-config", file])
        #expect(check.code == 1)
        #expect(check.stderr.contains("actions.a.user: no user named \"no-such-user-x\""), "\(check.stderr)")
        #expect(check.stderr.contains("actions.b.group: needs user"))
        #expect(check.stderr.contains("actions.c.umask: expected an octal mask"))
        // Without root, another user is refused.
        try #"{ actions: { a: { exec: ["true"], user: "root" } } }"#.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        let asNobody = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.batond, "--check-config", file])
        #expect(asNobody.code == 1)
        #expect(asNobody.stderr.contains("actions.a.user: batond runs as uid 65534, not root, so it cannot run processes as root"), "\(asNobody.stderr)")
    }
}
