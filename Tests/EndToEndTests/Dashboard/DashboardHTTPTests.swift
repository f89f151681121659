import BatonCore
import BatonIPC
import Foundation
import Testing

/// The dashboard at the HTTP level, on a real batond: each defence refuses with its status, the
/// API answers as batond does, and the event stream delivers transitions in order and resumes.
@Suite("End to end: the dashboard over HTTP", .offPool)
struct DashboardHTTPTests {
    static let config = """
        {
          actions: {
            a: { exec: ["true"] },
            slow: { exec: ["sleep", "30"], policy: "reject" },
            deploy: { exec: ["true"], params: { env: { pattern: "^(staging|prod)$" } } },
          },
        }
        """

    func pageFields(_ dashboard: DashboardProcess) throws -> [String: String] {
        try dashboard.authorization().merging(["Origin": "http://\(dashboard.hostPort)", "Content-Type": "application/json"]) { $1 }
    }

    @Test("session, Host, Origin, method, type, size and head limits are each refused with their status")
    func defences() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let port = dashboard.port
        let session = try dashboard.authorization()
        // The page and its files are served to anyone (they are the same for everyone); no cookie is ever set.
        let page = try HTTPProbe.request(port: port, "GET", "/")
        #expect(page.status == 200)
        #expect(page.field("Set-Cookie") == nil)
        #expect(page.body.contains("<script src=\"/app.js\""))
        #expect(!page.body.contains("<script>"), "no inline script")
        #expect(page.field("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(page.field("X-Frame-Options") == "DENY")
        #expect(page.field("Access-Control-Allow-Origin") == nil, "no CORS")

        let fields = try pageFields(dashboard)
        let cases: [(String, String, [String: String], String, Int)] = [
            ("GET", "/api/status", [:], "", 401),
            ("GET", "/events", [:], "", 401),
            ("GET", "/api/status", ["Authorization": "Bearer wrong"], "", 401),
            ("GET", "/api/status", ["Cookie": "baton_dashboard=\(try dashboard.session())"], "", 401),
            ("GET", "/", session.merging(["Host": "attacker.example:\(port)"]) { $1 }, "", 421),
            ("GET", "/nope", session, "", 404),
            ("GET", "/api/trigger", session, "", 405),
            ("DELETE", "/api/status", session, "", 405),
            ("POST", "/api/trigger", fields.filter { $0.key != "Authorization" }, #"{"action":"a"}"#, 401),
            ("POST", "/api/trigger", fields.merging(["Origin": "http://attacker.example"]) { $1 }, #"{"action":"a"}"#, 403),
            ("POST", "/api/trigger", fields.filter { $0.key != "Origin" }, #"{"action":"a"}"#, 403),
            ("POST", "/api/trigger", fields.merging(["Content-Type": "text/plain"]) { $1 }, #"{"action":"a"}"#, 415),
            ("POST", "/api/trigger", fields, String(repeating: " ", count: 16_385), 413),
            ("POST", "/api/trigger", fields, "not json", 400),
            ("POST", "/api/session", ["Origin": "http://\(dashboard.hostPort)", "Content-Type": "application/json"], "not json", 400),
            ("POST", "/api/session", ["Origin": "http://attacker.example", "Content-Type": "application/json"], #"{"code":"x"}"#, 403),
        ]
        for (method, path, fields, body, status) in cases {
            let answer = try HTTPProbe.request(port: port, method, path, fields: fields, body: body)
            #expect(answer.status == status, "\(method) \(path) \(fields) → \(answer.status) \(answer.body)")
        }
        // Too many header fields, and a head too large.
        let many = Dictionary(uniqueKeysWithValues: (0..<60).map { ("X-Field-\($0)", "v") })
        #expect(try HTTPProbe.request(port: port, "GET", "/", fields: many).status == 431)
        #expect(try HTTPProbe.request(port: port, "GET", "/", fields: ["X-Big": String(repeating: "b", count: 9_000)]).status == 431)
        // Nothing of the refused triggers reached batond.
        #expect(try daemon.baton("history", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test("a code signs in one page, once: a second use signs that page out too; a code that is not one gets nothing")
    func oneTimeCodes() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let code = DashboardProcess.code(of: dashboard.url)
        #expect(code.count == 64 && code.allSatisfy(\.isHexDigit))
        let first = try dashboard.signIn(code: code)
        #expect(first.status == 200 && first.field("Set-Cookie") == nil, "\(first.head)")
        let token = try #require(DashboardProcess.field("session", in: first.body))
        #expect(token != code && token.count == 64)
        let status = { (token: String) throws -> Int in
            try HTTPProbe.request(port: dashboard.port, "GET", "/api/status", fields: ["Authorization": "Bearer \(token)"]).status
        }
        #expect(try status(token) == 200)
        #expect(try status(code) == 401, "a code is not a session")
        // The same code again (as whoever read it over the owner's shoulder would): refused, and the
        // page it signed in is signed out; the owner is told.
        let again = try dashboard.signIn(code: code)
        #expect(again.status == 401 && again.body.contains("used already"), "\(again.body)")
        #expect(try status(token) == 401)
        #expect(dashboard.child.readStdout { $0.contains("a page signed in") }.contains("a page signed in (code …\(code.suffix(6)))"))
        #expect(dashboard.child.readStderr { $0.contains("came a second time") }.contains("someone else read it"))
        // A made-up code, and Enter's new code works while the old one stays dead.
        #expect(try dashboard.signIn(code: String(repeating: "0", count: 64)).status == 401)
        let fresh = try dashboard.signIn(code: DashboardProcess.code(of: try dashboard.newAddress()))
        #expect(fresh.status == 200)
        #expect(try dashboard.signIn(code: code).status == 401)
    }

    @Test("a head that never ends is answered 408 and closed")
    func slowHead() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let probe = try HTTPProbe(port: dashboard.port)
        probe.send("GET / HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\n")
        #expect(try probe.answer(timeout: .seconds(30)).status == 408)
    }

    @Test("the API answers as batond: trigger, a param refused before it is sent, busy, cancel, history, a run, unknown ones")
    func api() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let port = dashboard.port
        let post = { (path: String, body: String) throws -> HTTPProbe.Answer in
            try HTTPProbe.request(port: port, "POST", path, fields: try pageFields(dashboard), body: body)
        }
        let session = try dashboard.authorization()
        let get = { (path: String) throws -> HTTPProbe.Answer in try HTTPProbe.request(port: port, "GET", path, fields: session) }

        let bad = try post("/api/trigger", #"{"action":"deploy","params":{"env":"nope"}}"#)
        #expect(bad.status == 400)
        #expect(bad.body.contains(#"param env: \"nope\" does not match ^(staging|prod)$"#), "\(bad.body)")
        let missing = try post("/api/trigger", #"{"action":"deploy"}"#)
        #expect(missing.status == 400 && missing.body.contains("param env is required by action deploy"))
        #expect(try post("/api/trigger", #"{"action":"nope"}"#).status == 404)

        let started = try post("/api/trigger", #"{"action":"slow"}"#)
        #expect(started.status == 200 && started.body.contains(#""decision":"created""#), "\(started.body)")
        let busy = try post("/api/trigger", #"{"action":"slow"}"#)
        #expect(busy.status == 409 && busy.body.contains(#""code":"busy""#))
        let status = try get("/api/status")
        #expect(status.body.contains(#""allowed":["read","trigger","cancel","pause"]"#))
        #expect(status.body.contains(#""seq":2"#), "the loading run carries its seq")
        let cancelled = try post("/api/cancel", #"{"run":1}"#)
        #expect(cancelled.status == 200 && cancelled.body.contains(#""runs""#))
        #expect(try daemon.baton("wait", "1").code == 3)

        let history = try get("/api/history?action=slow&phase=cancelled&limit=5")
        #expect(history.status == 200 && history.body.contains(#""id":1"#))
        #expect(try get("/api/history?phase=sideways").status == 400)
        #expect(try get("/api/history?color=red").status == 400)
        let run = try get("/api/runs/1")
        #expect(run.status == 200 && run.body.hasPrefix(#"{"users":{"0":"root"},"#) && run.body.contains(#""transitions""#), "\(run.body)")
        #expect(try get("/api/runs/999").status == 404)
    }

    @Test("the event stream: a snapshot, then each transition in order; after a drop it resumes from Last-Event-ID")
    func eventStream() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        func open(lastEventID: String? = nil) throws -> HTTPProbe {
            let probe = try HTTPProbe(port: dashboard.port)
            var head = "GET /events HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\nAuthorization: Bearer \(try dashboard.session())\r\n"
            if let lastEventID { head += "Last-Event-ID: \(lastEventID)\r\n" }
            probe.send(head + "\r\n")
            return probe
        }
        func updates(_ probe: HTTPProbe, count: Int) throws -> [HTTPProbe.Event] {
            var found: [HTTPProbe.Event] = []
            while found.count < count {
                let event = try #require(probe.nextEvent(), "after \(found.count) of \(count) updates")
                if event.name == "update" { found.append(event) }
            }
            return found
        }
        func transitions(_ events: [HTTPProbe.Event]) throws -> [(run: Int64, seq: Int, to: String)] {
            try events.map { event in
                let response = try JSONDecoder().decode(Response.self, from: Data(event.data.utf8))
                let transition = try #require(response.transition)
                return (transition.runID, transition.seq, transition.to.rawValue)
            }
        }

        var first: HTTPProbe? = try open()
        let snapshot = try #require(first?.nextEvent())
        #expect(snapshot.name == "snapshot" && snapshot.data.contains(#""actions""#))
        let epoch = try #require(snapshot.id?.split(separator: "-").first)
        for _ in 0..<3 { #expect(try daemon.baton("run", "a").code == 0) }
        let seen = try updates(try #require(first), count: 9)
        let steps = try transitions(seen)
        #expect(steps.map(\.run) == [1, 1, 1, 2, 2, 2, 3, 3, 3])
        #expect(steps.map(\.to) == Array(repeating: ["queued", "loading", "success"], count: 3).flatMap { $0 })
        let ids = seen.compactMap(\.id)
        #expect(ids.count == 9 && ids.allSatisfy { $0.hasPrefix("\(epoch)-") })
        #expect(ids.compactMap { Int($0.split(separator: "-")[1]) } == Array((1...9)))

        // Drop the stream after the fourth update; two more runs happen while it is gone.
        let resumeFrom = ids[3]
        first = nil
        for _ in 0..<2 { #expect(try daemon.baton("run", "a").code == 0) }
        let second = try open(lastEventID: resumeFrom)
        let replayed = try transitions(try updates(second, count: 11))
        #expect(replayed.first.map { "\($0.run) \($0.seq)" } == "2 2", "the first update after the one the page last saw")
        #expect(replayed.map(\.run).suffix(6) == [4, 4, 4, 5, 5, 5])

        // An id from another epoch (a dashboard or batond that restarted) gets a new snapshot.
        let third = try open(lastEventID: "0000-5")
        #expect(third.nextEvent()?.name == "snapshot")
    }

    @Test("batond going away: the stream says offline, then a fresh snapshot once it is back; progress comes as its own event")
    func batondRestart() throws {
        let daemon = try Daemon(config: """
            { actions: { p: { exec: ["sh", "-c", "echo 1/2 half >&3; sleep 30"], survivesRestart: false } } }
            """)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let probe = try HTTPProbe(port: dashboard.port)
        probe.send("GET /events HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\nAuthorization: Bearer \(try dashboard.session())\r\n\r\n")
        #expect(probe.nextEvent()?.name == "snapshot")
        #expect(try daemon.baton("run", "p", "--detach").code == 0)
        var progress: HTTPProbe.Event?
        while progress == nil, let event = probe.nextEvent(), event.name != "offline" {
            if event.name == "progress" { progress = event }
        }
        #expect(progress?.data.contains(#""fraction":0.5"#) == true, "\(String(describing: progress))")
        daemon.crash()
        var event = probe.nextEvent()
        while let current = event, current.name == "update" { event = probe.nextEvent() }
        #expect(event?.name == "offline", "\(String(describing: event))")
        // survivesRestart: false: the crash interrupts the run (a surviving one would be adopted, still loading).
        let again = try Daemon(config: #"{ actions: { p: { exec: ["true"] } } }"#, reusing: daemon)
        defer { again.stop() }
        event = probe.nextEvent(timeout: .seconds(30))
        #expect(event?.name == "snapshot", "\(String(describing: event))")
        #expect(event?.data.contains(#""interrupted""#) == true, "the run batond's stop interrupted shows as the last outcome")
    }

    @Test("--open starts $BROWSER on a file only its user can read: nothing in the browser's argv signs in; the file's code works once, then the file is gone")
    func openAndListen() throws {
        let daemon = try Daemon(config: Self.config)
        let record = daemon.directory + "/opened"
        let browser = daemon.directory + "/browser.sh"
        try installExecutable("#!/bin/sh\necho \"$@\" > \(record).part && mv \(record).part \(record)\n", at: browser)
        let opened = try DashboardProcess(socket: daemon.socket, arguments: ["--open"], environment: ["BROWSER": browser])
        defer { opened.stop() }
        let argv = Eventually.value("the browser launched (\(record))", within: 30, {
            ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }) { !$0.isEmpty }
        // What every local user can read (`ps -eo args`): a file's name, no code and no session.
        #expect(argv.hasPrefix("file:///") && argv.hasSuffix("/open.html"), "\(argv)")
        #expect(!argv.contains("code") && argv.range(of: "[0-9a-f]{16}", options: .regularExpression) == nil, "\(argv)")
        let path = String(argv.dropFirst("file://".count))
        var file = stat(), directory = stat()
        #expect(stat(path, &file) == 0 && stat((path as NSString).deletingLastPathComponent, &directory) == 0)
        #expect(file.st_mode & 0o7777 == 0o600 && file.st_uid == getuid())
        #expect(directory.st_mode & 0o7777 == 0o700 && directory.st_uid == getuid())
        let other = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/cat", path])
        #expect(other.code != 0 && !other.stdout.contains("code="), "another user cannot read it")

        let page = try String(contentsOfFile: path, encoding: .utf8)
        let address = try #require(page.split(separator: "\"").first { $0.contains("#code=") }.map(String.init))
        #expect(address.hasPrefix("0;url=http://\(opened.hostPort)/#code="))
        let code = DashboardProcess.code(of: address)
        #expect(!opened.output.contains(code), "the file's code is its own, not the one on the terminal")
        #expect(try opened.signIn(code: code).status == 200)
        // The file goes first, its directory just after: wait for both.
        let folder = (path as NSString).deletingLastPathComponent
        Eventually.until("the file and its folder gone once used", within: 30) { access(path, F_OK) != 0 && access(folder, F_OK) != 0 }
        // The dashboard's own argv carries nothing either.
        let cmdline = try String(contentsOfFile: "/proc/\(opened.child.pid)/cmdline", encoding: .utf8)
        #expect(!cmdline.contains(code))

        let usage = try daemon.baton("dashboard", "--listen", "example.com:80")
        #expect(usage.code == 2 && usage.stderr.contains("--listen: expected ADDRESS:PORT"))
    }

    /// Issue 21, item 17: every request was 421 (the Host set held only `0.0.0.0:PORT`) and the
    /// address printed was `http://0.0.0.0:…`.
    @Test("--listen 0.0.0.0:0 and [::]:0: the printed address is one of the machine's, and it, loopback and localhost are served", arguments: ["0.0.0.0", "::"])
    func wildcard(host: String) throws {
        let loopback = host == "::" ? "::1" : "127.0.0.1"
        let daemon = try Daemon(config: Self.config)
        let wide = try DashboardProcess(socket: daemon.socket, arguments: ["--listen", host == "::" ? "[::]:0" : "0.0.0.0:0"])
        defer { wide.stop() }
        let warning = wide.child.availableStderr()
        #expect(warning.contains("is not a loopback address"), "\(warning)")
        let printed = wide.hostPort.hasPrefix("[") ? String(wide.hostPort.dropFirst().prefix { $0 != "]" }) : String(wide.hostPort.prefix { $0 != ":" })
        let own = ListenAddress(host: host, port: 0).machineAddresses()
        #expect(printed != host && printed != "0.0.0.0" && own.contains(printed), "printed \(wide.url); the machine has \(own)")
        #expect(own.contains { !$0.hasPrefix("127.") && $0 != "::1" } ? printed != loopback : printed == loopback, "the first address that is not loopback")
        let v6 = host == "::"
        let name = { (address: String) in (v6 ? "[\(address)]" : address) + ":\(wide.port)" }
        for (address, hostField, status) in [(loopback, name(loopback), 200), (printed, name(printed), 200), (loopback, "localhost:\(wide.port)", 200),
                                             (printed, name(loopback), 200), (loopback, "evil.example:\(wide.port)", 421),
                                             (loopback, name(host == "::" ? "::" : "0.0.0.0"), 421)] {
            let answer = try HTTPProbe.request(port: wide.port, address: address, "GET", "/", fields: ["Host": hostField])
            #expect(answer.status == status, "Host \(hostField) to \(address): \(answer.status) \(answer.body)")
        }
        // The printed address signs in, from a page whose origin is that address.
        let signIn = try HTTPProbe.request(port: wide.port, address: printed, "POST", "/api/session",
                                           fields: ["Origin": "http://\(name(printed))", "Content-Type": "application/json"],
                                           body: #"{"code":"\#(DashboardProcess.code(of: wide.url))"}"#)
        #expect(signIn.status == 200, "\(signIn.body)")
    }
}

extension DashboardHTTPTests {
    @Test("a run's page data lists the runs it needs and the runs that need it, with their phases (needs, issue 40 item 2)")
    func needs() throws {
        let daemon = try Daemon(config: """
            { requireUser: false, actions: { a: { exec: ["true"] }, c: { exec: ["true"], needs: ["a"] } } }
            """)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "c").code == 0)
        let session = try dashboard.authorization()
        let c = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1", fields: session)
        #expect(Self.links(c.body, "needs") == ["a 2 success"], "\(c.body)")
        let a = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/2", fields: session)
        #expect(Self.links(a.body, "neededBy") == ["c 1 success"], "\(a.body)")
        let page = try HTTPProbe.request(port: dashboard.port, "GET", "/app.js", fields: session)
        #expect(page.body.contains("function renderNeeds("), "the run page draws them")
    }

    /// The runs listed under `field` of an `/api/runs/N` answer's run, as `action run phase`.
    static func links(_ body: String, _ field: String) -> [String] {
        let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        let run = (object?["detail"] as? [String: Any])?["run"] as? [String: Any]
        return (run?[field] as? [[String: Any]] ?? []).map { "\($0["action"] ?? "?") \($0["run"] ?? "?") \($0["phase"] ?? "?")" }
    }
}
