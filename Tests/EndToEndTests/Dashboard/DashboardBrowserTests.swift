import BatonCore
import BatonIPC
import Foundation
import Testing

/// The dashboard in a real browser: headless Chromium, driven by WebDriver, on a real batond.
/// With BATON_UPDATE_SCREENSHOTS=1 the screenshots replace those in docs/images.
@Suite("End to end: the dashboard in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardBrowserTests {
    /// `quick` runs until its gate file exists: a test sees its loading state for as long as it
    /// needs, however slow the browser is under load, then lets it end.
    static let gate = NSTemporaryDirectory() + "baton-quick-gate-" + UUID().uuidString
    static let config = """
        {
          actions: {
            quick: { description: "Succeeds after a moment", policy: "join",
                     exec: ["sh", "-c", "while [ ! -e \\"$GATE\\" ]; do sleep 0.02; done; echo all good"], env: { GATE: "\(gate)" } },
            build: {
              description: "Reports its progress",
              exec: ["sh", "-c", "for i in 1 2 3 4 5 6; do echo \\"$i/6 step $i\\" >&3; sleep 0.4; done"],
              policy: "queue",
            },
            single: { description: "One at a time: a second press is refused", exec: ["sleep", "60"], policy: "reject" },
            broken: { description: "Always fails", exec: ["sh", "-c", "echo 'disk full' >&2; exit 3"] },
            deploy: {
              description: "Deploy to an environment",
              exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"],
              params: { env: { pattern: "^(staging|prod)$", default: "staging" } },
              keyParams: ["env"],
            },
          },
        }
        """

    static let screenshots: String = {
        if ProcessInfo.processInfo.environment["BATON_UPDATE_SCREENSHOTS"] == "1" {
            return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../docs/images").standardizedFileURL.path
        }
        let directory = NSTemporaryDirectory() + "baton-screenshots-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }()

    /// Keeps `quick` loading until `release()`.
    static func hold() { unlink(gate) }
    static func release() { FileManager.default.createFile(atPath: gate, contents: nil) }

    /// The runs of an action, newest first, as batond's history has them.
    static func runs(_ daemon: Daemon, _ action: String) throws -> [RunSnapshot] {
        try Client(path: daemon.socket).call(Request(op: .history, filter: HistoryFilter(actions: [action]))).runs ?? []
    }

    /// A batond on the suite's config, its dashboard, and a browser on the dashboard's page; `body`
    /// runs off the pool with all three.
    static func withPage(width: Int = 1100, height: Int = 900, dark: Bool = false,
                         _ body: @escaping @Sendable (Daemon, DashboardProcess, WebDriver) throws -> Void) async throws {
        let daemon = try Daemon(config: config)
        defer { daemon.stop() }
        // Whatever the test held, the run ends before batond is stopped.
        defer { release() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver(width: width, height: height, dark: dark)
            defer { browser.quit() }
            try browser.open(dashboard.url)
            try body(daemon, dashboard, browser)
        }
    }

    static func card(_ action: String) -> String { "document.querySelector('.card[data-action=\"\(action)\"]')" }

    @Test("press: the button shows loading at once, follows the run live, ends with ✓; a failure shows ✗ and the error")
    func pressAndFollow() async throws {
        try await Self.withPage(height: 1250) { daemon, dashboard, browser in
            #expect(try browser.wait(until: "\(Self.card("quick")) && document.querySelector('#connection').dataset.state === 'live'"))
            // The code left the address bar (traded for a session the page keeps in its own origin's storage).
            #expect(try browser.script("return location.href;") as? String == "http://\(dashboard.hostPort)/")
            try browser.screenshot(to: Self.screenshots + "/dashboard-idle.png")

            Self.hold()
            try browser.click(".card[data-action=\"quick\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.flight[data-phase=\"loading\"] .spinner')"))
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.press-button').textContent.startsWith('Join run')"),
                    "a join action's button offers to join the run in flight")
            Self.release()
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.note').textContent.includes('succeeded in')"))
            #expect(try browser.text(".card[data-action=\"quick\"] .note").hasPrefix("✓ run 1 succeeded in"))
            #expect(try browser.wait(until: "!\(Self.card("quick")).querySelector('.flight')"))
            #expect(try browser.wait(until: "!\(Self.card("quick")).querySelector('.flight')"), "the loading state is gone")
            // Again: now there is a past run, so the bar is an estimate; a second press joins.
            Self.hold()
            try browser.click(".card[data-action=\"quick\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.flight-text')?.textContent.includes('(usually ')"))
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.press-button').textContent.startsWith('Join run')"))
            try browser.click(".card[data-action=\"quick\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.note').textContent.includes('(shared)')"))
            #expect(try browser.text(".card[data-action=\"quick\"] .note") == "joined run 2 (shared)")
            Self.release()
            #expect(try browser.wait(until: "\(Self.card("quick")).querySelector('.note').textContent.startsWith('✓ run 2 succeeded')"))

            try browser.click(".card[data-action=\"build\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("build")).querySelector('.flight progress') && \(Self.card("build")).querySelector('.flight progress').value >= 0.3"),
                    "the action's progress lines move the bar")
            #expect(try browser.wait(until: "\(Self.card("build")).querySelector('.press-button').textContent.startsWith('Queue after run ')"),
                    "a queue action's button offers to queue after the run in flight")
            try browser.screenshot(to: Self.screenshots + "/dashboard-loading.png")
            try browser.click(".card[data-action=\"build\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("build")).querySelector('.note').textContent.includes('to start after the run in flight')"))
            #expect(try browser.wait(until: "\(Self.card("build")).querySelector('.press-button').textContent.startsWith('Join follow-up run')"))

            try browser.click(".card[data-action=\"broken\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("broken")).querySelector('.note[data-tone=\"bad\"]')"))
            #expect(try browser.text(".card[data-action=\"broken\"] .note").contains("failed after"))
            #expect(try browser.text(".card[data-action=\"broken\"] .note").contains("exited with status 3"))
            // The history below follows live: the failure is in it without a reload.
            #expect(try browser.wait(until: "[...document.querySelectorAll('#history .phase-failure')].length === 1"))
            #expect(try browser.wait(until: "[...document.querySelectorAll('#history .phase-success')].length >= 2", seconds: 30),
                    "both build runs end and show in the history")
            try browser.screenshot(to: Self.screenshots + "/dashboard-outcomes.png")
            #expect(try Self.runs(daemon, "build").count == 2, "a press and a follow-up: two build runs")
            #expect(try Self.runs(daemon, "quick").count == 2, "the join made no run")
        }
    }

    @Test("reject: the button is disabled while a run is in flight, whoever pressed it; cancel ends it")
    func rejectAndCancel() async throws {
        try await Self.withPage { daemon, _, browser in
            let button = "\(Self.card("single")).querySelector('.press-button')"
            #expect(try browser.wait(until: "\(button) && !\(button).disabled"))
            try browser.click(".card[data-action=\"single\"] .press-button")
            #expect(try browser.wait(until: "\(button).disabled && \(button).textContent.startsWith('Loading')"))
            // A second press does nothing: the button is disabled, and batond has one run.
            try browser.click(".card[data-action=\"single\"] .press-button")
            #expect(try browser.script("return \(button).disabled;") as? Bool == true)
            try browser.screenshot(to: Self.screenshots + "/dashboard-reject.png")
            #expect(try Self.runs(daemon, "single").count == 1)

            // Cancel from the page: the run ends cancelled, the button comes back.
            try browser.click(".card[data-action=\"single\"] .cancel")
            #expect(try browser.wait(until: "\(Self.card("single")).querySelector('.note').textContent.includes('cancelled by')"))
            #expect(try browser.wait(until: "!\(button).disabled"))

            // Pressed by someone else (the CLI): the page's button is disabled all the same.
            #expect(try daemon.baton("run", "single", "--detach").code == 0)
            #expect(try browser.wait(until: "\(button).disabled"))
            #expect(try daemon.baton("run", "single").code == 75, "batond agrees: busy")
            #expect(try daemon.baton("cancel", "single").code == 0)
            #expect(try browser.wait(until: "!\(button).disabled"))
        }
    }

    @Test("params: a value that fails its pattern is refused with the CLI's message, next to its field; a good one runs")
    func paramPattern() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let cli = try daemon.baton("run", "deploy", "-p", "env=nope")
        #expect(cli.code == 2)
        let message = cli.stderr.split(separator: "\n").first.map { String($0.dropFirst("Error: ".count)) } ?? ""
        #expect(message == "param env: \"nope\" does not match ^(staging|prod)$")
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#param-deploy-env')"))
            try browser.type("#param-deploy-env", "nope")
            // Keyboard: Enter in the field submits its form.
            try browser.keys("\u{E007}")
            #expect(try browser.wait(until: "document.querySelector('#param-deploy-env-error').textContent !== ''"))
            #expect(try browser.text("#param-deploy-env-error") == message)
            #expect(try browser.script("return document.querySelector('#param-deploy-env').getAttribute('aria-invalid');") as? String == "true")
            try browser.screenshot(to: Self.screenshots + "/dashboard-param-error.png")
            try browser.type("#param-deploy-env", "prod")
            try browser.click(".card[data-action=\"deploy\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("deploy")).querySelector('.note').textContent.includes('succeeded')"))
            // The history's param filter, as `baton history --param env=staging`: nothing matches, then prod does.
            try browser.type("#filter-param", "env=staging")
            try browser.keys("\u{E007}")
            #expect(try browser.wait(until: "document.querySelector('#history tbody').textContent === 'No runs match.'"))
            try browser.type("#filter-param", "env=prod")
            try browser.keys("\u{E007}")
            #expect(try browser.wait(until: "document.querySelectorAll('#history tbody tr[data-run]').length === 1"))
        }
        // Nothing was sent to batond for the bad value: its only deploy run is the good one.
        #expect(try Self.runs(daemon, "deploy").map(\.params) == [["env": "prod"]])
    }

    @Test("a run's page: its timeline, who triggered and joined it, and its output")
    func runPage() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        Self.hold()
        #expect(try daemon.baton("run", "quick", "--detach").stdout == "1\n")
        #expect(try daemon.baton("run", "quick", "--detach").stdout == "1\n", "joins run 1")
        Self.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        try await onThread {
            let browser = try WebDriver(width: 420, height: 900)
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('.card .last a')"))
            try browser.click(".card[data-action=\"quick\"] .last a")
            #expect(try browser.wait(until: "document.querySelectorAll('#timeline li').length === 3"))
            #expect(try browser.text("#run-title") == "Run 1: quick")
            #expect(try browser.text("#run-state").hasPrefix("✓ run 1 succeeded in"))
            let triggers = try browser.text("#triggers")
            #expect(triggers.contains("root (uid 0)") && triggers.contains("created") && triggers.contains("joined"), "\(triggers)")
            #expect(try browser.text("#output").contains("all good"))
            #expect(try browser.text("#timeline").contains("queued → loading"))
            try browser.screenshot(to: Self.screenshots + "/dashboard-run-phone.png")
        }
    }

    @Test("keyboard and dark mode: Tab reaches the buttons in order, Enter presses; a dark system gets the dark page")
    func keyboardAndDark() async throws {
        try await Self.withPage(dark: true) { _, _, browser in
            #expect(try browser.wait(until: "document.querySelectorAll('.card .press-button').length === 5"))
            #expect(try browser.script("return matchMedia('(prefers-color-scheme: dark)').matches;") as? Bool == true)
            #expect(try browser.script("return getComputedStyle(document.body).backgroundColor;") as? String == "rgb(20, 23, 27)")
            // Tab: the Baton link first, then the first card's title, a link to its page ("broken", in
            // name order), then its button.
            try browser.keys("\u{E004}\u{E004}")
            #expect(try browser.script("return document.activeElement.getAttribute('href');") as? String == "/actions/broken")
            try browser.keys("\u{E004}")
            #expect(try browser.script("return document.activeElement.dataset.action;") as? String == "broken")
            #expect(try browser.script("return getComputedStyle(document.activeElement).outlineStyle;") as? String == "solid", "a visible focus ring")
            try browser.keys("\u{E007}")
            #expect(try browser.wait(until: "\(Self.card("broken")).querySelector('.note[data-tone=\"bad\"]')"))
            try browser.screenshot(to: Self.screenshots + "/dashboard-dark.png")
        }
    }

    @Test("a user who may read but not trigger sees every button disabled, and no cancel")
    func readOnlyUser() async throws {
        let daemon = try Daemon(config: """
            {
              socketMode: "0666",
              allow: { trigger: { users: ["root"] }, cancel: { users: ["root"] }, read: { users: ["*"] } },
              actions: {
                quick: { exec: ["sleep", "30"] },
                other: { exec: ["true"], description: "Nobody but root may press this" },
              },
            }
            """)
        defer { daemon.stop() }
        chmod(daemon.directory, 0o755)
        #expect(try daemon.baton("run", "quick", "--detach").code == 0)
        let dashboard = try DashboardProcess(socket: daemon.socket,
                                             launcher: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelectorAll('.card .press-button').length === 2 && document.querySelector('.flight')"))
            #expect(try browser.script("return [...document.querySelectorAll('.press-button')].every((b) => b.disabled);") as? Bool == true)
            #expect(try browser.script("return document.querySelectorAll('.cancel').length;") as? Int == 0)
            #expect(try browser.script("return document.querySelector('.press-button').title;") as? String == "you may not trigger other")
            try browser.screenshot(to: Self.screenshots + "/dashboard-read-only.png")
        }
        #expect(try daemon.baton("cancel", "quick").code == 0)
        // The API refuses as batond does, whatever the page shows.
        let refused = try HTTPProbe.request(port: dashboard.port, "POST", "/api/trigger",
                                            fields: try dashboard.authorization().merging(["Origin": "http://\(dashboard.hostPort)", "Content-Type": "application/json"]) { $1 },
                                            body: #"{"action": "other"}"#)
        #expect(refused.status == 403)
        #expect(refused.body.contains("uid 65534 (nobody) may not trigger other"))
    }
}
