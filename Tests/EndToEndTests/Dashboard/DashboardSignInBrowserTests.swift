import BatonCore
import BatonIPC
import Foundation
import Testing

/// How a browser signs in to the dashboard, and what it must never hand to anyone else: another
/// local user's web server on another port of 127.0.0.1 (which every cookie for 127.0.0.1 would
/// reach), and another local user reading the browser's argv.
@Suite("End to end: the dashboard's sign-in in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardSignInBrowserTests {
    static let config = #"{ actions: { a: { exec: ["true"] } } }"#
    static let live = "document.querySelector('#connection').dataset.state === 'live' && document.querySelector('.card')"
    static let sessionKey = "baton-dashboard-session"

    /// A web server on another loopback port that writes every request it receives, head and
    /// body, to `record`, and serves a page that loads, posts to and links the dashboard.
    static func hostileServer(port: UInt16, dashboard: String, record: String) throws -> Spawned {
        let script = """
            import http.server, sys
            record, dashboard = sys.argv[1], sys.argv[2]
            PAGE = f'''<!doctype html><title>cats</title>
            <img src="/pixel.png"><img src="http://{dashboard}/api/status"><img src="http://{dashboard}/app.js">
            <iframe src="http://{dashboard}/"></iframe>
            <script>
            fetch("http://{dashboard}/api/trigger", {{method: "POST", mode: "no-cors", credentials: "include",
                  headers: {{"Content-Type": "text/plain"}}, body: '{{"action":"a"}}', signal: AbortSignal.timeout(5000)}}).catch(() => 0)
              .then(() => fetch("/after", {{credentials: "include"}})).then(() => {{ document.title = "done"; }});
            </script>'''
            class Handler(http.server.BaseHTTPRequestHandler):
                def handle_one_request(self):
                    super().handle_one_request()
                def log(self):
                    with open(record, "a") as f:
                        f.write(self.requestline + "\\n" + str(self.headers) + "\\n")
                def do_GET(self):
                    self.log()
                    body = PAGE.encode() if self.path == "/" else b""
                    self.send_response(200 if self.path == "/" else 204)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args):
                    pass
            http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[3])), Handler).serve_forever()
            """
        return try Spawned(["/usr/bin/python3", "-c", script, record, dashboard, String(port)])
    }

    @Test("another user's server on another loopback port receives nothing that works on the dashboard, whatever its page does")
    func otherPort() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let record = daemon.directory + "/hostile-requests"
        let port = try WebDriver.freePort()
        let hostile = try Self.hostileServer(port: port, dashboard: dashboard.hostPort, record: record)
        defer { hostile.stop() }
        let token = try await onThread { () throws -> String in
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: Self.live))
            #expect(try browser.script("return location.href;") as? String == "http://\(dashboard.hostPort)/", "the code left the address bar")
            let token = try #require(try browser.script("return localStorage.getItem('\(Self.sessionKey)');") as? String)
            // The same browser, now on the other user's page (a link, a redirect, a bookmark).
            Eventually.until("the other user's page opened", within: 30) { (try? browser.open("http://127.0.0.1:\(port)/")) != nil }
            #expect(try browser.wait(until: "document.title === 'done'"))
            // Back on the dashboard, the page is still signed in: the session exists, it was just never sent.
            try browser.open("http://\(dashboard.hostPort)/")
            #expect(try browser.wait(until: Self.live))
            return token
        }
        let received = try String(contentsOfFile: record, encoding: .utf8)
        #expect(received.contains("GET / HTTP/1.1") && received.contains("GET /after"), "\(received)")
        #expect(!received.lowercased().contains("cookie:"), "\(received)")
        #expect(!received.contains(token) && !received.lowercased().contains("authorization"), "\(received)")
        #expect(!received.contains(DashboardProcess.code(of: dashboard.url)), "\(received)")
        // Whatever it received, tried on the dashboard as a session, a cookie or a code: refused.
        let values = received.split(separator: "\n").compactMap { line in line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } }
        for value in Set(values) where !value.isEmpty {
            for fields in [["Authorization": "Bearer \(value)"], ["Cookie": "baton_dashboard=\(value)"], ["Cookie": value]] {
                #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/api/status", fields: fields).status == 401, "\(fields)")
            }
            #expect(try dashboard.signIn(code: value).status != 200)
        }
        // The page's cross-origin POST reached nothing: no run.
        #expect(try Client(path: daemon.socket).call(Request(op: .history)).runs?.isEmpty == true)
    }

    @Test("--open: the browser starts on a private file, signs in with its code, and the file is gone")
    func openThroughFile() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let record = daemon.directory + "/opened"
        let launcher = daemon.directory + "/browser.sh"
        try installExecutable("#!/bin/sh\necho \"$1\" > \(record).part && mv \(record).part \(record)\n", at: launcher)
        let dashboard = try DashboardProcess(socket: daemon.socket, arguments: ["--open"], environment: ["BROWSER": launcher])
        defer { dashboard.stop() }
        let argv = Eventually.value("the browser launched (\(record))", within: 30, {
            ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }) { !$0.isEmpty }
        #expect(argv.hasPrefix("file:///"))
        let file = argv
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(file)
            #expect(try browser.wait(until: Self.live))
            #expect(try browser.script("return location.href;") as? String == "http://\(dashboard.hostPort)/")
        }
        let path = String(argv.dropFirst("file://".count))
        Eventually.until("the file gone once its code is used", within: 30) { access(path, F_OK) != 0 }
        // The terminal's own code was not used and still works, once.
        #expect(try dashboard.signIn(code: DashboardProcess.code(of: dashboard.url)).status == 200)
    }

    @Test("a used or made-up code in the address: the page says it is not signed in and how to get a new address")
    func badCode() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try dashboard.signIn(code: DashboardProcess.code(of: dashboard.url)).status == 200)
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').textContent === 'not signed in'"))
            #expect(try browser.text("#banner").contains("press Enter where `baton dashboard` runs for a new address"))
            #expect(try browser.script("return localStorage.getItem('\(Self.sessionKey)');") as? String == nil, "nothing kept")
            try browser.open("http://\(dashboard.hostPort)/")
            #expect(try browser.wait(until: "document.querySelector('#connection').textContent === 'not signed in'"))
            // A new address from the terminal signs the page in.
            try browser.open(try dashboard.newAddress())
            #expect(try browser.wait(until: Self.live))
        }
    }
}
