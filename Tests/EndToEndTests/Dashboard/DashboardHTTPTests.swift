import BatonCore
import BatonIPC
import Foundation
import Testing

/// The dashboard at the HTTP level, on a real batond: each defence refuses with its status, the
/// API answers as batond does, and the event stream delivers transitions in order and resumes.
@Suite("End to end: the dashboard over HTTP")
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

    func pageFields(_ dashboard: DashboardProcess) -> [String: String] {
        ["Cookie": dashboard.cookie, "Origin": "http://\(dashboard.hostPort)", "Content-Type": "application/json"]
    }

    @Test("token, Host, Origin, method, type, size and head limits are each refused with their status")
    func defences() throws {
        let daemon = try Daemon(config: Self.config)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let port = dashboard.port
        // The token in the address is traded for the cookie, and the address left clean.
        let exchange = try HTTPProbe.request(port: port, "GET", "/?token=\(dashboard.token)")
        #expect(exchange.status == 303)
        #expect(exchange.field("Location") == "/")
        #expect(exchange.field("Set-Cookie") == "baton_dashboard=\(dashboard.token); Path=/; HttpOnly; SameSite=Strict")
        let page = try HTTPProbe.request(port: port, "GET", "/", fields: ["Cookie": dashboard.cookie])
        #expect(page.status == 200)
        #expect(page.body.contains("<script src=\"/app.js\""))
        #expect(!page.body.contains("<script>"), "no inline script")
        #expect(page.field("Content-Security-Policy")?.contains("script-src 'self'") == true)
        #expect(page.field("X-Frame-Options") == "DENY")
        #expect(page.field("Access-Control-Allow-Origin") == nil, "no CORS")

        let cases: [(String, String, [String: String], String, Int)] = [
            ("GET", "/", [:], "", 401),
            ("GET", "/?token=wrong", [:], "", 401),
            ("GET", "/api/status", ["Cookie": "baton_dashboard=wrong"], "", 401),
            ("GET", "/", ["Cookie": dashboard.cookie, "Host": "attacker.example:\(port)"], "", 421),
            ("GET", "/nope", ["Cookie": dashboard.cookie], "", 404),
            ("GET", "/api/trigger", ["Cookie": dashboard.cookie], "", 405),
            ("DELETE", "/api/status", ["Cookie": dashboard.cookie], "", 405),
            ("POST", "/api/trigger", pageFields(dashboard).merging(["Origin": "http://attacker.example"]) { $1 }, #"{"action":"a"}"#, 403),
            ("POST", "/api/trigger", pageFields(dashboard).filter { $0.key != "Origin" }, #"{"action":"a"}"#, 403),
            ("POST", "/api/trigger", pageFields(dashboard).merging(["Content-Type": "text/plain"]) { $1 }, #"{"action":"a"}"#, 415),
            ("POST", "/api/trigger", pageFields(dashboard), String(repeating: " ", count: 16_385), 413),
            ("POST", "/api/trigger", pageFields(dashboard), "not json", 400),
        ]
        for (method, path, fields, body, status) in cases {
            let answer = try HTTPProbe.request(port: port, method, path, fields: fields, body: body)
            #expect(answer.status == status, "\(method) \(path) \(fields) → \(answer.status) \(answer.body)")
        }
        // Too many header fields, and a head too large.
        let many = Dictionary(uniqueKeysWithValues: (0..<60).map { ("X-Field-\($0)", "v") })
        #expect(try HTTPProbe.request(port: port, "GET", "/", fields: many.merging(["Cookie": dashboard.cookie]) { $1 }).status == 431)
        #expect(try HTTPProbe.request(port: port, "GET", "/", fields: ["Cookie": dashboard.cookie, "X-Big": String(repeating: "b", count: 9_000)]).status == 431)
        // Nothing of the refused triggers reached batond.
        #expect(try daemon.baton("history", "--json").stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
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
            try HTTPProbe.request(port: port, "POST", path, fields: pageFields(dashboard), body: body)
        }
        let get = { (path: String) throws -> HTTPProbe.Answer in try HTTPProbe.request(port: port, "GET", path, fields: ["Cookie": dashboard.cookie]) }

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
        #expect(status.body.contains(#""allowed":["read","trigger","cancel"]"#))
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
            var head = "GET /events HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\nCookie: \(dashboard.cookie)\r\n"
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
            { actions: { p: { exec: ["sh", "-c", "echo 1/2 half >&3; sleep 30"] } } }
            """)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let probe = try HTTPProbe(port: dashboard.port)
        probe.send("GET /events HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\nCookie: \(dashboard.cookie)\r\n\r\n")
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
        let again = try Daemon(config: #"{ actions: { p: { exec: ["true"] } } }"#, reusing: daemon)
        defer { again.stop() }
        event = probe.nextEvent(timeout: .seconds(30))
        #expect(event?.name == "snapshot", "\(String(describing: event))")
        #expect(event?.data.contains(#""interrupted""#) == true, "the run batond's stop interrupted shows as the last outcome")
    }

    @Test("--open starts $BROWSER with the address; a non-loopback --listen warns")
    func openAndListen() throws {
        let daemon = try Daemon(config: Self.config)
        let record = daemon.directory + "/opened"
        let browser = daemon.directory + "/browser.sh"
        try "#!/bin/sh\necho \"$1\" > \(record)\n".write(toFile: browser, atomically: true, encoding: .utf8)
        chmod(browser, 0o755)
        let opened = try DashboardProcess(socket: daemon.socket, arguments: ["--open"], environment: ["BROWSER": browser])
        defer { opened.stop() }
        var text = ""
        for _ in 0..<100 where !text.contains("token=") {
            usleep(50_000)
            text = (try? String(contentsOfFile: record, encoding: .utf8)) ?? ""
        }
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == opened.url)

        let wide = try DashboardProcess(socket: daemon.socket, arguments: ["--listen", "0.0.0.0:0"])
        defer { wide.stop() }
        let warning = wide.child.availableStderr()
        #expect(warning.contains("is not a loopback address"), "\(warning)")
        let usage = try daemon.baton("dashboard", "--listen", "example.com:80")
        #expect(usage.code == 2 && usage.stderr.contains("--listen: expected ADDRESS:PORT"))
    }
}
