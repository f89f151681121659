import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// A run waiting for approval (issue 40 item 5): its page shows the Approve/Deny pair, with its
/// params in full, to an approver who is not its trigger; pressing Approve in Chromium runs it.
@Suite("End to end: approvals on the dashboard in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardApprovalBrowserTests {
    @Test("nobody triggers deploy ref=v7; root's dashboard offers Approve with the params; pressed, the run succeeds, live")
    func approve() async throws {
        try #require(geteuid() == 0, "needs root to trigger as another user")
        let daemon = try Self.openToAll("""
            deploy: { exec: ["true"], params: { ref: {} }, approve: { by: ["user:root"], timeout: "1h" } },
            """)
        defer { daemon.stop() }
        let triggered = try Self.asNobody(socket: daemon.socket, "run", "deploy", "-p", "ref=v7", "--detach")
        #expect(triggered.code == 0, "\(triggered.stderr)")
        try await Self.pressApprove(socket: daemon.socket, run: 1, params: "ref=v7")
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("approval: approved by root at ") && show.stdout.contains("params: ref=v7"), "\(show.stdout)")
    }

    /// A dashboard on `socket`, signed in as root in Chromium: run `run`'s page offers the
    /// Approve/Deny pair with its params; Approve pressed, the page shows it succeeded, live.
    static func pressApprove(socket: String, run: Int64, params: String) async throws {
        try await onRunPage(socket: socket, run: run) { browser throws in
            #expect(try browser.wait(until: "document.querySelector('#run-controls .approve')"), "the pair is offered to an approver")
            #expect(try browser.text("#run-controls .approval-params") == "with params \(params)")
            #expect(try browser.script("return document.querySelector('#run-facts').textContent.includes('waiting for approval by user:root');") as? Bool == true)
            _ = try browser.script("document.querySelector('#run-controls .approve').click(); return true;")
            #expect(try browser.wait(until: "document.querySelector('#run-state').textContent.includes('succeeded')"), "approved, the run ran")
        }
    }

    /// A dashboard on `socket`, signed in as root in Chromium, on run `run`'s page: `body` looks at it.
    static func onRunPage(socket: String, run: Int64, _ body: @escaping @Sendable (WebDriver) throws -> Void) async throws {
        let dashboard = try DashboardProcess(socket: socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').dataset.state === 'live'"), "signed in")
            try browser.open("http://\(dashboard.hostPort)/runs/\(run)")
            try body(browser)
        }
    }

    /// A batond whose socket and directory anyone may reach and whose `actions` anyone may trigger.
    static func openToAll(_ actions: String) throws -> Daemon {
        let daemon = try Daemon(config: """
            { requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } }, actions: { \(actions) } }
            """)
        chmod(daemon.directory, 0o755)
        return daemon
    }

    /// `baton --socket SOCKET ARGUMENTS` as nobody (uid and gid 65534, no other group).
    static func asNobody(socket: String, _ arguments: String...) throws -> Output {
        try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", socket] + arguments)
    }

    @Test("a fleet: nobody triggers deploy ref=v9 on web-1; web-2's dashboard offers Approve with the params; pressed, the run succeeds on web-1, live on web-2's page")
    func approveInFleet() async throws {
        try #require(geteuid() == 0, "needs root to trigger as another user")
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["true"], params: { ref: {} }, approve: { by: ["user:root"], timeout: "1h" } },
            """, conninfo: conninfo, settings: #"requireUser: false, socketMode: "0666", allow: { trigger: { users: ["*"] } },"#)
        defer { for host in hosts { host.stop() } }
        for host in hosts { chmod(host.directory, 0o755) }
        let triggered = try Self.asNobody(socket: hosts[0].socket, "run", "deploy", "-p", "ref=v9", "--detach", "--json")
        let run = try #require(Int64(try ApprovalEndToEndTests.runID(triggered)), "\(triggered.stdout)\(triggered.stderr)")
        // web-2's status has read the wait from its feed before its dashboard is opened.
        try Eventually.until("web-2's status says deploy waits for user:root's approval") { try hosts[1].baton("status", "deploy").stdout.contains("waiting for approval by user:root") }
        try await Self.pressApprove(socket: hosts[1].socket, run: run, params: "ref=v9")
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT verdict, decided_by FROM approvals WHERE run_id = $1", [String(run)]).first == ["approved", "root"])
        #expect(try db.query("SELECT phase, host FROM runs WHERE id = $1", [String(run)]).first == ["success", "web-1"], "ran on its own host")
    }

    @Test("a hook's run waiting: its approver sees, beside the pair, the run that fired it with its params and who triggered it")
    func firingRunShown() async throws {
        try #require(geteuid() == 0, "needs root to trigger as another user")
        let daemon = try Self.openToAll("""
            build: { exec: ["true"], params: { ref: {} }, on: { success: "deploy" } },
            deploy: { exec: ["true"], approve: { by: ["user:root"], timeout: "1h" } },
            """)
        defer { daemon.stop() }
        let triggered = try Self.asNobody(socket: daemon.socket, "run", "build", "-p", "ref=evil")
        #expect(triggered.code == 0, "\(triggered.stderr)")
        try await Self.onRunPage(socket: daemon.socket, run: 2) { browser throws in
            #expect(try browser.wait(until: "document.querySelector('#run-controls .approval-from')"), "what fired it is shown")
            let from = try browser.text("#run-controls .approval-from")
            #expect(from.hasPrefix("from build run 1 with params ref=evil, by ") && from.contains("uid 65534"), "\(from)")
        }
    }

    @Test("a run cancelled while it waited: its page says it ended before a decision, not that it waits (review item 7)")
    func endedUndecided() async throws {
        let daemon = try Daemon(config: """
            {
              requireUser: false,
              actions: {
                deploy: { exec: ["true"], params: { ref: {} }, approve: { by: ["user:root"], timeout: "1h" } },
              },
            }
            """)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "deploy", "-p", "ref=v8", "--detach").code == 0)
        #expect(try daemon.baton("cancel", "1").code == 0)
        try await Self.onRunPage(socket: daemon.socket, run: 1) { browser throws in
            #expect(try browser.wait(until: "document.querySelector('#run-facts').textContent.includes('ended before a decision')"),
                    "\(String(describing: try? browser.script("return document.querySelector('#run-facts').textContent;")))")
            #expect(try browser.script("return document.querySelector('#run-facts').textContent.includes('waiting for approval');") as? Bool == false)
        }
    }
}
