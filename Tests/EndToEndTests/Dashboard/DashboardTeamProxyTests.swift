import Foundation
import Testing

/// Issue 42, item 5: the team's dashboard behind a real nginx. nginx asks a stand-in for
/// oauth2-proxy (a second nginx server that names the user the test's cookie says) with
/// `auth_request`, and passes the name on in X-Forwarded-User; the dashboard, run as root (as
/// batond's user would run it), believes the field only from nginx's address (127.0.0.2) and
/// asks batond `as` that user. "alice" is the machine's `daemon` account (may trigger), "bob" is
/// `nobody` (may read only).
@Suite("End to end: the team's dashboard behind nginx", .serialized,
       .enabled(if: WebDriver.available && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") && getuid() == 0,
                "needs chromium, chromium-driver and nginx, as root"), .offPool)
struct DashboardTeamProxyTests {
    static let config = """
        {
          allow: { trigger: { users: ["root", "daemon"] }, cancel: { users: ["root"] }, read: { users: ["*"] } },
          actions: {
            deploy: { exec: ["true"], description: "Ship it" },
            payroll: { exec: ["true"], allow: { read: { users: ["root", "daemon"] } } },
          },
        }
        """

    /// nginx's config: the public server on `port`, the sign-in stand-in on `auth`, the dashboard on `dashboard`.
    static func nginxConfig(directory: String, port: UInt16, auth: UInt16, dashboard: UInt16) -> String {
        """
        user nobody nogroup;
        worker_processes 1;
        error_log \(directory)/error.log;
        events { worker_connections 64; }
        http {
          access_log off;
          client_body_temp_path \(directory)/body;
          proxy_temp_path \(directory)/proxy;
          fastcgi_temp_path \(directory)/fastcgi;
          uwsgi_temp_path \(directory)/uwsgi;
          scgi_temp_path \(directory)/scgi;
          # Stands in for oauth2-proxy's /oauth2/auth: 202 with the user, or 401.
          server {
            listen 127.0.0.1:\(auth);
            location / {
              if ($cookie_user = "") { return 401; }
              add_header X-Auth-Request-Preferred-Username $cookie_user always;
              add_header X-Auth-Request-Groups $cookie_groups always;
              return 202;
            }
          }
          server {
            listen 127.0.0.1:\(port);
            location = /oauth2/auth {
              internal;
              proxy_pass http://127.0.0.1:\(auth);
              proxy_pass_request_body off;
              proxy_set_header Content-Length "";
            }
            location / {
              auth_request /oauth2/auth;
              auth_request_set $user $upstream_http_x_auth_request_preferred_username;
              proxy_set_header X-Forwarded-User $user;
              auth_request_set $groups $upstream_http_x_auth_request_groups;
              proxy_set_header X-Forwarded-Groups $groups;
              proxy_set_header Host $http_host;
              proxy_http_version 1.1;
              proxy_set_header Connection "";
              proxy_buffering off;
              proxy_read_timeout 1h;
              proxy_bind 127.0.0.2;
              proxy_pass http://127.0.0.1:\(dashboard);
            }
          }
        }
        """
    }

    @Test("alice presses deploy through nginx and the run is hers; bob's button is disabled; the field sent past nginx is refused")
    func throughNginx() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let directory = NSTemporaryDirectory() + "baton-team-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (port, auth, dashboardPort) = (try WebDriver.freePort(), try WebDriver.freePort(), try WebDriver.freePort())
        let dashboard = try Spawned([Binaries.baton, "--socket", daemon.socket, "dashboard", "--listen", "127.0.0.1:\(dashboardPort)",
                                     "--trusted-proxy", "127.0.0.2/32", "--proxy-user", "nobody"])
        defer { dashboard.stop() }
        let banner = dashboard.readStdout { $0.contains("listening on") && $0.hasSuffix("\n") }
        #expect(banner.contains("believing x-forwarded-user from 127.0.0.2/32 only"), "\(banner) \(dashboard.availableStderr())")
        try Self.nginxConfig(directory: directory, port: port, auth: auth, dashboard: dashboardPort)
            .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginx = try Spawned(["/usr/sbin/nginx", "-c", directory + "/nginx.conf", "-g", "daemon off; pid \(directory)/nginx.pid;"])
        defer { nginx.stop() }
        try Self.waitForListener(port: port, nginx)

        // Skipping nginx: the dashboard refuses the field from anyone but nginx's address.
        let forged = try HTTPProbe.request(port: dashboardPort, "GET", "/api/status", fields: ["X-Forwarded-User": "root"])
        #expect(forged.status == 403 && forged.body.contains("believed only from the dashboard's trusted proxies"), "\(forged.status) \(forged.body)")
        // Through nginx without signing in: the stand-in says 401.
        #expect(try HTTPProbe.request(port: port, "GET", "/api/status").status == 401)
        // Through nginx, a client's own X-Forwarded-User is replaced by the signed-in user's.
        let replaced = try HTTPProbe.request(port: port, "GET", "/api/status", fields: ["Cookie": "user=nobody", "X-Forwarded-User": "root"])
        #expect(replaced.status == 200 && replaced.body.contains(#""allowed":["read"]"#), "\(replaced.body)")

        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            let site = "http://127.0.0.1:\(port)/"
            // alice (the daemon account) signs in at the stand-in (a cookie) and presses deploy.
            try browser.open(site)
            _ = try browser.script("document.cookie = 'user=daemon; path=/';")
            try browser.open(site)
            let button = "document.querySelector('.card[data-action=\"deploy\"] .press-button')"
            #expect(try browser.wait(until: "\(button) && !\(button).disabled && document.querySelector('#connection').dataset.state === 'live'"))
            try browser.click(".card[data-action=\"deploy\"] .press-button")
            #expect(try browser.wait(until: "document.querySelector('.card[data-action=\"deploy\"] .note').textContent.includes('succeeded')"))
            // bob (nobody) sees the card with its button disabled.
            _ = try browser.script("document.cookie = 'user=nobody; path=/';")
            try browser.open(site)
            #expect(try browser.wait(until: "\(button) && \(button).disabled"))
            #expect(try browser.script("return \(button).title;") as? String == "you may not trigger deploy")
        }
        // The run was triggered as alice's account (uid 1), not as the dashboard's root.
        let shown = try daemon.baton("history", "--json", "deploy")
        let runs = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(runs.count == 1, "\(shown.stdout)")
        #expect((runs.first?["trigger"] as? [String: Any])?["uid"] as? Int == 1, "\(shown.stdout)")

        // bob's event stream: his snapshot lists no payroll, and payroll's updates never reach him
        // (the dashboard's one watch sees them; his stream passes on only what he may read).
        let stream = try HTTPProbe(port: port)
        stream.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: user=nobody\r\nAuthorization: Bearer any\r\n\r\n")
        let snapshot = try #require(stream.nextEvent())
        #expect(snapshot.name == "snapshot" && snapshot.data.contains(#""name":"deploy""#) && !snapshot.data.contains("payroll"), "\(snapshot)")
        #expect(try daemon.baton("run", "payroll").code == 0)
        #expect(try daemon.baton("run", "deploy").code == 0)
        var seen: [HTTPProbe.Event] = []
        while let event = stream.nextEvent(timeout: .seconds(10)) {
            seen.append(event)
            if event.data.contains(#""phase":"succeeded""#) && event.data.contains(#""action":"deploy""#) { break }
        }
        #expect(seen.contains { $0.data.contains(#""action":"deploy""#) }, "\(seen)")
        #expect(!seen.contains { $0.data.contains("payroll") }, "\(seen)")

        // A team's pages all come through the proxy: more than one peer's share (8) of them stay open.
        let pages = try (0..<20).map { _ in try HTTPProbe(port: port) }
        for page in pages { page.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: user=nobody\r\nAuthorization: Bearer any\r\n\r\n") }
        for (index, page) in pages.enumerated() {
            let first = page.nextEvent()
            #expect(first?.name == "snapshot", "page \(index): \(String(describing: first))")
        }
    }

    @Test("a team's dashboard started by an ordinary user stops at once: batond takes `as` only from root and its own user")
    func ordinaryUserRefused() throws {
        let daemon = try Daemon(config: #"{ socketMode: "0666", actions: { deploy: { exec: ["true"] } } }"#)
        defer { daemon.stop() }
        chmod(daemon.directory, 0o755)
        let started = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", daemon.socket,
                                                      "dashboard", "--trusted-proxy", "127.0.0.2"])
        #expect(started.code == 77, "\(started.code) \(started.stdout) \(started.stderr)")
        #expect(started.stderr.contains("may not ask as another user"), "\(started.stderr)")
    }

    @Test("the proxy options are checked before anything is served: a world-wide range, an unknown proxy user, an HTTP field or one clients set as the user or groups header")
    func optionsRefused() throws {
        for (arguments, said) in [(["--trusted-proxy", "0.0.0.0/0"], "trusts a whole network or the world"),
                                  (["--trusted-proxy", "::/8"], "trusts a whole network or the world"),
                                  (["--trusted-proxy", "127.0.0.2", "--proxy-user", "no-such-user-here"], "--proxy-user: no user no-such-user-here"),
                                  (["--trusted-proxy", "127.0.0.2", "--user-header", "Cookie"], "is a field of HTTP itself"),
                                  (["--trusted-proxy", "127.0.0.2", "--groups-header", "User-Agent"], "--groups-header: User-Agent is a field of HTTP itself or one clients set"),
                                  (["--trusted-proxy", "127.0.0.2", "--groups-header", "x-forwarded-for"], "one clients set"),
                                  (["--trusted-proxy", "127.0.0.2", "--groups-header", "Referer"], "one clients set"),
                                  (["--trusted-proxy", "127.0.0.2", "--groups-header", "Sec-Fetch-User"], "one clients set"),
                                  (["--proxy-user", "nobody"], "--proxy-user needs --trusted-proxy")] {
            let started = try execute(Binaries.baton, ["--socket", "/nonexistent/baton.sock", "dashboard"] + arguments)
            #expect(started.code == 2 && started.stderr.contains(said), "\(arguments): \(started.code) \(started.stderr)")
        }
    }

    /// Until nginx answers on `port` (or it has died).
    static func waitForListener(port: UInt16, _ nginx: Spawned) throws {
        guard Eventually.held(within: 30, { (try? HTTPProbe.request(port: port, "GET", "/api/status")) != nil }) else {
            throw DashboardError("nginx did not listen on \(port) within 30 s: \(nginx.availableStderr())")
        }
    }
}
