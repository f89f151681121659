import Foundation
import Testing

/// Issue 42, item 5: the team's dashboard behind a real nginx, with a user map (`--user-map`). The
/// sign-in stand-in names people by e-mail address (the test's cookie); the map makes
/// `daemon@example.org` the `daemon` account and everyone else at example.org a member of the local
/// group `staff`, who may trigger deploy (its group's rule) and not payroll (root's only), and is
/// recorded as who they are, via the group.
@Suite("End to end: the team's dashboard maps a proxy's e-mail names to accounts and groups", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") && getuid() == 0, "needs nginx, as root"), .offPool)
struct DashboardTeamMapTests {
    static let config = """
        {
          allow: { trigger: { users: ["root"] }, cancel: { users: ["root"] }, read: { users: ["*"] } },
          actions: {
            deploy: { exec: ["true"], allow: { trigger: { groups: ["staff"] } } },
            payroll: { exec: ["true"] },
          },
        }
        """

    @Test("carol@example.org, a member of staff by the map, triggers deploy, not payroll, and the history names her; unmapped names are refused; SIGHUP rereads the map")
    func mappedUsers() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let directory = NSTemporaryDirectory() + "baton-team-map-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let map = directory + "/users.map"
        try "# who is who\ndaemon@example.org  daemon\n*@example.org  group:staff   # everyone else here\ngroup:staff  group:staff\n".write(toFile: map, atomically: true, encoding: .utf8)
        let (port, auth, dashboardPort) = (try WebDriver.freePort(), try WebDriver.freePort(), try WebDriver.freePort())
        let dashboard = try Spawned([Binaries.baton, "--socket", daemon.socket, "dashboard", "--listen", "127.0.0.1:\(dashboardPort)",
                                     "--trusted-proxy", "127.0.0.2/32", "--proxy-user", "nobody", "--user-map", map])
        defer { dashboard.stop() }
        let banner = dashboard.readStdout { $0.contains("listening on") && $0.hasSuffix("\n") }
        #expect(banner.contains("listening on"), "\(banner) \(dashboard.availableStderr())")
        try DashboardTeamProxyTests.nginxConfig(directory: directory, port: port, auth: auth, dashboard: dashboardPort)
            .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginx = try Spawned(["/usr/sbin/nginx", "-c", directory + "/nginx.conf", "-g", "daemon off; pid \(directory)/nginx.pid;"])
        defer { nginx.stop() }
        try DashboardTeamProxyTests.waitForListener(port: port, nginx)

        let trigger = { (user: String, action: String) throws -> HTTPProbe.Answer in
            try HTTPProbe.request(port: port, "POST", "/api/trigger",
                                  fields: ["Cookie": "user=\(user)", "Origin": "http://127.0.0.1:\(port)", "Content-Type": "application/json"],
                                  body: #"{"action": "\#(action)"}"#)
        }
        let carol = try trigger("carol@example.org", "deploy")
        #expect(carol.status == 200, "\(carol.status) \(carol.body)")
        let payroll = try trigger("carol@example.org", "payroll")
        #expect(payroll.status == 403 && payroll.body.contains("carol@example.org via group:staff may not trigger payroll"), "\(payroll.status) \(payroll.body)")
        // daemon@example.org is the daemon account, not in staff: its own rights, not the group's.
        let account = try trigger("daemon@example.org", "deploy")
        #expect(account.status == 403 && account.body.contains("(daemon) may not trigger deploy"), "\(account.status) \(account.body)")
        // A name the map does not map, and that is no account name: refused, naming the map.
        let stranger = try HTTPProbe.request(port: port, "GET", "/api/status", fields: ["Cookie": "user=mallory@evil.test"])
        #expect(stranger.status == 403 && stranger.body.contains("no rule of \(map) maps it"), "\(stranger.status) \(stranger.body)")
        // Her page shows deploy's button enabled, payroll's not.
        let status = try HTTPProbe.request(port: port, "GET", "/api/status", fields: ["Cookie": "user=carol@example.org"])
        #expect(status.status == 200 && status.body.contains(#""allowed":["read","trigger"]"#), "\(status.body)")

        // In Chromium through nginx: her page offers deploy's button and not payroll's.
        if WebDriver.available {
            try await onThread {
                let browser = try WebDriver()
                defer { browser.quit() }
                let site = "http://127.0.0.1:\(port)/"
                try browser.open(site)
                _ = try browser.script("document.cookie = 'user=carol@example.org; path=/';")
                try browser.open(site)
                let button = { (action: String) in "document.querySelector('.card[data-action=\"\(action)\"] .press-button')" }
                #expect(try browser.wait(until: "\(button("deploy")) && !\(button("deploy")).disabled && \(button("payroll")) && \(button("payroll")).disabled"))
                #expect(try browser.script("return \(button("payroll")).title;") as? String == "you may not trigger payroll")
            }
        }

        // The history names her, via the group; the run is deploy's only one.
        let history = try daemon.baton("history", "--json", "deploy")
        let runs = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(runs.count == 1 && runs.first?["via"] as? String == "carol@example.org via group:staff", "\(history.stdout)")
        let shown = try daemon.baton("show", String(runs.first?["id"] as? Int ?? 0))
        #expect(shown.stdout.contains("triggered by carol@example.org via group:staff"), "\(shown.stdout)")
        // In Chromium through nginx: her run's page says who triggered it, via the group (app.js's peerName).
        if WebDriver.available {
            let id = runs.first?["id"] as? Int ?? 0
            try await onThread {
                let browser = try WebDriver()
                defer { browser.quit() }
                let site = "http://127.0.0.1:\(port)/"
                try browser.open(site)
                _ = try browser.script("document.cookie = 'user=carol@example.org; path=/';")
                try browser.open(site + "runs/\(id)")
                let said = "[...document.querySelectorAll('#run-facts dt')].find(dt => dt.textContent === 'triggered by')"
                #expect(try browser.wait(until: "\(said) && \(said).nextElementSibling.textContent.startsWith('carol@example.org via group:staff, pid ')"),
                        "\(String(describing: try? browser.script("return document.querySelector('#run-facts')?.textContent;")))")
            }
        }
        // Her refused trigger of payroll is recorded naming her too.
        let denied = try daemon.baton("history", "--denied")
        #expect(denied.stdout.contains("carol@example.org via group:staff") && denied.stdout.contains("payroll"), "\(denied.stdout)")

        // X-Forwarded-Groups: a person no name rule maps, in the proxy's group staff, gets staff's
        // rights and is named via it; the same field sent by the browser is not believed (nginx sets it).
        let erin = try HTTPProbe.request(port: port, "POST", "/api/trigger",
                                         fields: ["Cookie": "user=erin@elsewhere.test; groups=staff", "Origin": "http://127.0.0.1:\(port)",
                                                  "Content-Type": "application/json"], body: #"{"action": "deploy"}"#)
        #expect(erin.status == 200, "\(erin.status) \(erin.body)")
        let latest = try JSONSerialization.jsonObject(with: Data(try daemon.baton("history", "--json", "deploy").stdout.utf8)) as? [[String: Any]] ?? []
        #expect(latest.first?["via"] as? String == "erin@elsewhere.test via group:staff", "\(latest)")
        let forged = try HTTPProbe.request(port: port, "GET", "/api/status", fields: ["Cookie": "user=erin@elsewhere.test", "X-Forwarded-Groups": "staff"])
        #expect(forged.status == 403 && forged.body.contains("no rule of \(map) maps it"), "\(forged.status) \(forged.body)")

        // SIGHUP: the map read again; carol is now nobody's group, and a bad line keeps the rules in use.
        try "*@example.org  group:nogroup\n".write(toFile: map, atomically: true, encoding: .utf8)
        kill(dashboard.pid, SIGHUP)
        #expect(dashboard.readStdout { $0.contains("SIGHUP: read") }.contains("(1 rules)"))
        let after = try trigger("carol@example.org", "deploy")
        #expect(after.status == 403 && after.body.contains("carol@example.org via group:nogroup may not trigger deploy"), "\(after.status) \(after.body)")
        try "*@example.org\n".write(toFile: map, atomically: true, encoding: .utf8)
        kill(dashboard.pid, SIGHUP)
        let said = dashboard.readStderr { $0.contains("stay in use") }
        #expect(said.contains("\(map):1: expected a pattern and a target"), "\(said)")
        #expect(try trigger("carol@example.org", "deploy").status == 403)
    }

    @Test("a bad map refuses to start, naming the line; --user-map needs --trusted-proxy")
    func badMap() throws {
        let directory = NSTemporaryDirectory() + "baton-team-map-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "# fine\nalice@example.org alice\n*@example.org group:\n".write(toFile: directory + "/m", atomically: true, encoding: .utf8)
        let started = try execute(Binaries.baton, ["--socket", "/nonexistent/baton.sock", "dashboard", "--trusted-proxy", "127.0.0.2", "--user-map", directory + "/m"])
        #expect(started.code == 2 && started.stderr.contains("\(directory)/m:3: group: names no group"), "\(started.code) \(started.stderr)")
        let alone = try execute(Binaries.baton, ["--socket", "/nonexistent/baton.sock", "dashboard", "--user-map", directory + "/m"])
        #expect(alone.code == 2 && alone.stderr.contains("--user-map needs --trusted-proxy"), "\(alone.stderr)")
    }
}
