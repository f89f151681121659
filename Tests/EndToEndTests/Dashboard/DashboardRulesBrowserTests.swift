import BatonCore
import BatonIPC
import Foundation
import Testing

/// The rules around a run on the dashboard: what a press would do (`pressFor`, table-tested in the
/// page itself), a card inside its cooldown, and a card whose press would wait for a lock.
@Suite("End to end: the dashboard's rules in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardRulesBrowserTests {
    /// `migrate` holds lock db until this file exists.
    static let gate = NSTemporaryDirectory() + "baton-rules-gate-" + UUID().uuidString
    static let config = """
        {
          actions: {
            fresh: { description: "Runs at most once in 10 minutes", exec: ["sh", "-c", "echo fresh"], cooldown: "10m", policy: "join" },
            migrate: { exec: ["sh", "-c", "while [ ! -e \\"$GATE\\" ]; do sleep 0.02; done"], env: { GATE: "\(gate)" }, locks: ["db"] },
            backup: { exec: ["sh", "-c", "echo backed up"], locks: ["db"], on: { failure: "page", change: "page" } },
            page: { exec: ["sh", "-c", "echo paged"] },
            regional: { exec: ["sh", "-c", "echo $BATON_PARAM_REGION"], cooldown: "10m", keyParams: ["region"],
                        params: { region: { pattern: "^(eu|us)$", default: "eu" } } },
            flaky: { exec: ["sh", "-c", "exit 1"], on: { failure: "page" } },
          },
        }
        """

    static func card(_ action: String) -> String { "document.querySelector('.card[data-action=\"\(action)\"]')" }
    static func button(_ action: String) -> String { "\(card(action)).querySelector('.press-button')" }

    static func withPage(_ body: @escaping @Sendable (Daemon, DashboardProcess, WebDriver) throws -> Void) async throws {
        unlink(gate)
        let daemon = try Daemon(config: config)
        defer { daemon.stop() }
        defer { FileManager.default.createFile(atPath: gate, contents: nil) }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "\(Self.card("fresh")) && document.querySelector('#connection').dataset.state === 'live'"))
            try body(daemon, dashboard, browser)
        }
    }

    /// One row of the table: the action, the policy pressed with, the key's live state (JavaScript
    /// literals, `now` in scope), and the button it should get.
    struct Press: Sendable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var info: String
        var policy: String
        var key: String
        var label: String
        var disabled = false
        var title = ""
        var testDescription: String { name }
    }

    static let may = #"allowed: ["read", "trigger", "cancel"]"#
    static let cooled = #"lastSuccess: { id: 7, endedAt: now - 120e6 }"#
    static let heldDB = #"lock: { lock: "db", limit: 1, holders: [{ run: 12, action: "migrate" }], ahead: [] }"#
    static let table: [Press] = [
        Press(name: "idle", kind: "run", info: "{ name: 'a', \(may) }", policy: "join", key: "{ now }", label: "Run a"),
        Press(name: "may not trigger", kind: "denied", info: "{ name: 'a', allowed: ['read'] }", policy: "join", key: "{ now }",
              label: "Run a", disabled: true, title: "you may not trigger a"),
        Press(name: "pressed, not answered yet", kind: "pending", info: "{ name: 'a', \(may) }", policy: "join", key: "{ now, pending: true }",
              label: "Starting…", disabled: true),
        Press(name: "inside the cooldown", kind: "cooled", info: "{ name: 'a', cooldown: 600e6, \(may) }", policy: "join", key: "{ now, \(cooled) }",
              label: "Cooled: nothing will run",
              title: "run 7 succeeded 2m00s ago; for 8m00s more a press is answered with it (cooldown 10m)"),
        Press(name: "the cooldown is decided before the policy", kind: "cooled", info: "{ name: 'a', cooldown: 600e6, \(may) }", policy: "reject",
              key: "{ now, \(cooled), running: { id: 8, phase: 'loading' } }", label: "Cooled: nothing will run",
              title: "run 7 succeeded 2m00s ago; for 8m00s more a press is answered with it (cooldown 10m)"),
        Press(name: "a press exactly a cooldown after the success runs", kind: "run", info: "{ name: 'a', cooldown: 120e6, \(may) }", policy: "join",
              key: "{ now, \(cooled) }", label: "Run a"),
        Press(name: "a success without a cooldown does not cool", kind: "run", info: "{ name: 'a', \(may) }", policy: "join", key: "{ now, \(cooled) }",
              label: "Run a"),
        Press(name: "join", kind: "join", info: "{ name: 'a', \(may) }", policy: "join", key: "{ now, running: { id: 12, phase: 'loading' } }",
              label: "Join run 12"),
        Press(name: "queue, no follow-up yet", kind: "queue", info: "{ name: 'a', \(may) }", policy: "queue", key: "{ now, running: { id: 12, phase: 'loading' } }",
              label: "Queue after run 12"),
        Press(name: "queue, with a follow-up", kind: "queue", info: "{ name: 'a', \(may) }", policy: "queue",
              key: "{ now, running: { id: 12, phase: 'loading' }, followUp: { id: 13, phase: 'queued' } }", label: "Join follow-up run 13"),
        Press(name: "a line of three with one waiting, new params: queues second", kind: "queue",
              info: "{ name: 'a', queueDepth: 3, params: { ref: { default: 'main' } }, \(may) }", policy: "queue",
              key: "{ now, running: { id: 12, phase: 'loading' }, line: [{ id: 13, phase: 'queued', params: { ref: 'b' } }], params: { ref: 'c' } }",
              label: "Queue 2nd in line", title: "1 of 3 waiting"),
        Press(name: "a line, a waiting entry's params (defaults filled in): joins it", kind: "queue",
              info: "{ name: 'a', queueDepth: 3, params: { ref: { default: 'main' } }, \(may) }", policy: "queue",
              key: "{ now, running: { id: 12, phase: 'loading' }, line: [{ id: 13, phase: 'queued', params: { ref: 'b' } }, { id: 14, phase: 'queued', params: { ref: 'main' } }], params: {} }",
              label: "Join run 14 in line"),
        Press(name: "a full line, new params: refused as batond would", kind: "busy",
              info: "{ name: 'a', queueDepth: 2, \(may) }", policy: "queue",
              key: "{ now, running: { id: 12, phase: 'loading' }, line: [{ id: 13, phase: 'queued', params: { ref: 'b' } }, { id: 14, phase: 'queued', params: { ref: 'c' } }], params: { ref: 'd' } }",
              label: "Line full (2 waiting)", disabled: true, title: "the line of 2 is full: a press would be refused busy"),
        Press(name: "paused: disabled with the pause, before the cooldown and the policy", kind: "paused",
              info: "{ name: 'a', cooldown: 600e6, paused: { action: 'a', by: 'alice', reason: 'migrating db', at: now - 60e6, until: now + 7080e6 }, \(may) }",
              policy: "join", key: "{ now, \(cooled), running: { id: 12, phase: 'loading' } }", label: "Paused", disabled: true,
              title: "Paused by alice for 1h58m more: migrating db"),
        Press(name: "held (pause --hold): a press queues, the pause in its title", kind: "held",
              info: "{ name: 'a', paused: { action: 'a', by: 'alice', reason: 'migrating db', at: now - 60e6, hold: true }, \(may) }",
              policy: "reject", key: "{ now, running: { id: 12, phase: 'queued' } }", label: "Queue a (held)",
              title: "Held by alice until resumed: migrating db; a press waits queued until it ends"),
        Press(name: "a pause past its end: presses as usual", kind: "join",
              info: "{ name: 'a', paused: { action: 'a', by: 'alice', reason: 'r', at: now - 60e6, until: now }, \(may) }", policy: "join",
              key: "{ now, running: { id: 12, phase: 'loading' } }", label: "Join run 12"),
        Press(name: "reject, loading", kind: "busy", info: "{ name: 'a', \(may) }", policy: "reject", key: "{ now, running: { id: 12, phase: 'loading' } }",
              label: "Loading… (run 12)", disabled: true),
        Press(name: "reject, queued", kind: "busy", info: "{ name: 'a', \(may) }", policy: "reject", key: "{ now, running: { id: 12, phase: 'queued' } }",
              label: "Queued… (run 12)", disabled: true),
        Press(name: "replace", kind: "replace", info: "{ name: 'a', \(may) }", policy: "replace", key: "{ now, running: { id: 12, phase: 'loading' } }",
              label: "Replace run 12"),
        Press(name: "a lock in the way", kind: "lock", info: "{ name: 'a', \(may) }", policy: "join", key: "{ now, \(heldDB) }",
              label: "Wait for lock db", title: "a run would wait queued: waiting for lock db, held by migrate run 12"),
        Press(name: "the key's run in flight wins over the lock", kind: "join", info: "{ name: 'a', \(may) }", policy: "join",
              key: "{ now, \(heldDB), running: { id: 13, phase: 'queued' } }", label: "Join run 13"),
    ]

    @Test("what a press would do, as a table: permission, cooldown, policy, lock; and the card's rules and cooldown line")
    func pressTable() async throws {
        try await Self.withPage { _, _, browser in
            for row in Self.table {
                let answer = try browser.script("""
                    const now = 1700000000000000;
                    return JSON.stringify(pressFor(\(row.info), "\(row.policy)", \(row.key)));
                    """) as? String ?? ""
                let press = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any] ?? [:]
                #expect(press["label"] as? String == row.label, "\(row.name): \(answer)")
                #expect(press["kind"] as? String == row.kind, "\(row.name): \(answer)")
                #expect((press["disabled"] as? Bool ?? false) == row.disabled, "\(row.name): \(answer)")
                #expect((press["title"] as? String ?? "") == row.title, "\(row.name): \(answer)")
            }
            let words = try browser.script("""
                const now = 1700000000000000, info = { name: "a", cooldown: 600e6 };
                return [cooldownText(info, { id: 7, endedAt: now - 120e6 }, now), cooldownText(info, { id: 7, endedAt: now - 600e6 }, now),
                        cooldownText({ name: "a" }, { id: 7, endedAt: now }, now), cooldownText(info, null, now),
                        rulesText({ hooks: { failure: "page", change: "notify" }, cooldown: 3600e6, locks: [{ name: "db", limit: 1 }, { name: "io", limit: 2 }] }),
                        rulesText({ name: "plain" }), rulesText({ name: "lined", queueDepth: 5 }),
                        ordinal(1), ordinal(2), ordinal(3), ordinal(11), ordinal(22)];
                """) as? [Any] ?? []
            #expect(words.count == 12)
            #expect(words.suffix(6).compactMap { $0 as? String } == ["a line of 5", "1st", "2nd", "3rd", "11th", "22nd"])
            #expect(words.first as? String == "cooldown: last success 2m00s ago (run 7), 8m00s left")
            #expect(words.dropFirst().prefix(3).allSatisfy { $0 is NSNull }, "no line once the window is over, without a cooldown or a success")
            #expect(words.dropFirst(4).first as? String == "on failure: page · on change: notify · cooldown 1h · lock db · lock io (2 at once)")
            #expect(words.dropFirst(5).first as? String == "")
            // A follow-up's place moves up as the runs before it in its key's line start or end.
            let places = try browser.script("""
                const run = (id, phase, line) => ({ id, action: "zz", key: "zz", phase, line });
                const mine = [run(9001, "loading"), run(9002, "queued", 1), run(9004, "queued", 2), run(9005, "queued")];
                for (const r of mine) state.runs.set(r.id, r);
                const before = [linePlace(mine[2]), linePlace(mine[1]), linePlace(mine[0]), linePlace(mine[3])];
                state.runs.get(9002).phase = "loading";
                const after = linePlace(mine[2]);
                for (const r of mine) state.runs.delete(r.id);
                return JSON.stringify([...before, after]);
                """) as? String
            #expect(places == "[2,1,null,null,1]", "\(String(describing: places))")
            #expect(try browser.text(".card[data-action=\"backup\"] .rules") == "on failure: page · on change: page · lock db")
            #expect(try browser.text(".card[data-action=\"fresh\"] .rules") == "cooldown 10m")
            #expect(try browser.script("return \(Self.card("page")).querySelector('.rules') === null;") as? Bool == true,
                    "an action without rules has no rules line")
        }
    }

    @Test("a paused action: its card has a banner with who, why and how long, and its button is disabled with the pause")
    func pausedCard() async throws {
        try await Self.withPage { daemon, dashboard, browser in
            #expect(try daemon.baton("pause", "page", "--reason", "migrating db", "--for", "2h").code == 0)
            // A pause is not an event of the stream: the page learns it from its next snapshot (a reload here).
            _ = try browser.script("location.reload(); return true;")
            #expect(try browser.wait(until: "\(Self.card("page")) && !\(Self.card("page")).querySelector('.paused-banner').hidden"))
            let banner = try browser.text(".card[data-action=\"page\"] .paused-banner")
            #expect(banner.hasPrefix("Paused by ") && banner.hasSuffix(" more: migrating db"), "\(banner)")
            #expect(try browser.script("return \(Self.button("page")).disabled && \(Self.button("page")).textContent === 'Paused';") as? Bool == true)
            #expect(try browser.script("return \(Self.card("fresh")).querySelector('.paused-banner').hidden;") as? Bool == true)
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-paused.png")
        }
    }

    @Test("cooldown: after a success the card says so and its button says nothing will run; a press is answered with the success, and a reload keeps it")
    func cooldownCard() async throws {
        try await Self.withPage { daemon, dashboard, browser in
            #expect(try browser.text(".card[data-action=\"fresh\"] .press-button") == "Run fresh")
            #expect(try browser.script("return \(Self.card("fresh")).querySelector('.cooldown').hidden;") as? Bool == true)
            try browser.click(".card[data-action=\"fresh\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("fresh")).querySelector('.note').textContent.startsWith('✓ run 1 succeeded')"))
            #expect(try browser.wait(until: "\(Self.button("fresh")).textContent === 'Cooled: nothing will run'"))
            #expect(try browser.script("return \(Self.button("fresh")).dataset.press;") as? String == "cooled", "styled as a press that runs nothing")
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-cooldown.png")
            let line = try browser.text(".card[data-action=\"fresh\"] .cooldown")
            #expect(line.hasPrefix("cooldown: last success ") && line.contains(" ago (run 1), "), "\(line)")
            try browser.click(".card[data-action=\"fresh\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("fresh")).querySelector('.note').textContent.includes('nothing run')"))
            let note = try browser.text(".card[data-action=\"fresh\"] .note")
            #expect(note.hasPrefix("✓ run 1 succeeded ") && note.hasSuffix("; cooldown 10m, nothing run"), "\(note)")
            let runs = try Client(path: daemon.socket).call(Request(op: .history, filter: HistoryFilter(actions: ["fresh"]))).runs ?? []
            #expect(runs.count == 1, "the second press ran nothing")
            // Each key has its own window: us, then eu, so that eu's run is the action's last.
            for (region, run) in [("us", 2), ("eu", 3)] {
                try browser.type("#param-regional-region", region)
                #expect(try browser.wait(until: "\(Self.button("regional")).textContent === 'Run regional'"), "\(region) is not cooled yet")
                try browser.click(".card[data-action=\"regional\"] .press-button")
                #expect(try browser.wait(until: "\(Self.card("regional")).querySelector('.note').textContent.startsWith('✓ run \(run) succeeded')"))
                #expect(try browser.wait(until: "\(Self.button("regional")).textContent === 'Cooled: nothing will run'"))
            }
            // A fresh page learns the windows from batond's status (`cooling`): us's success is no
            // action's last run, so only `cooling` tells of it.
            try browser.open("http://\(dashboard.hostPort)/")
            #expect(try browser.wait(until: "\(Self.button("fresh"))?.textContent === 'Cooled: nothing will run'"))
            #expect(try browser.text(".card[data-action=\"fresh\"] .cooldown").hasPrefix("cooldown: last success "))
            try browser.type("#param-regional-region", "us")
            #expect(try browser.wait(until: "\(Self.card("regional")).querySelector('.cooldown').textContent.includes('(run 2)')"))
            #expect(try browser.text(".card[data-action=\"regional\"] .press-button") == "Cooled: nothing will run")
        }
    }

    @Test("locks: while migrate holds db, backup's button says a press waits for it; the run waits, says for whom, and starts once db is free")
    func lockCard() async throws {
        try await Self.withPage { _, _, browser in
            #expect(try browser.text(".card[data-action=\"backup\"] .press-button") == "Run backup")
            try browser.click(".card[data-action=\"migrate\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("migrate")).querySelector('.flight[data-phase=\"loading\"]')"))
            #expect(try browser.wait(until: "\(Self.button("backup")).textContent === 'Wait for lock db'"))
            #expect(try browser.script("return \(Self.button("backup")).title;") as? String
                == "a run would wait queued: waiting for lock db, held by migrate run 1")
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-lock-wait.png")
            try browser.click(".card[data-action=\"backup\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("backup")).querySelector('.flight[data-phase=\"queued\"] .flight-text')?.textContent.includes('waiting for lock db, held by migrate run 1')"))
            FileManager.default.createFile(atPath: Self.gate, contents: nil)
            #expect(try browser.wait(until: "\(Self.card("backup")).querySelector('.last')?.textContent.includes('run 2 succeeded') || \(Self.card("backup")).querySelector('.note').textContent.includes('run 2 succeeded')"))
            #expect(try browser.wait(until: "\(Self.button("backup")).textContent === 'Run backup'"), "db is free again")
        }
    }

    @Test("a run's page: the decisions recorded against it in words (a cooled press), and the hooks its end fired, linked")
    func runPage() async throws {
        try await Self.withPage { _, dashboard, browser in
            try browser.click(".card[data-action=\"fresh\"] .press-button")
            #expect(try browser.wait(until: "\(Self.button("fresh")).textContent === 'Cooled: nothing will run'"))
            try browser.click(".card[data-action=\"fresh\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("fresh")).querySelector('.note').textContent.includes('nothing run')"))
            try browser.click(".card[data-action=\"flaky\"] .press-button")
            #expect(try browser.wait(until: "\(Self.card("flaky")).querySelector('.note').textContent.includes('run 2 failed')"))

            try browser.open("http://\(dashboard.hostPort)/runs/1")
            #expect(try browser.wait(until: "document.querySelectorAll('#triggers li').length === 2"))
            let triggers = try browser.text("#triggers")
            #expect(triggers.contains("— created") && triggers.contains("— cooled (answered with this success inside the cooldown; nothing ran), policy join"),
                    "\(triggers)")
            #expect(try browser.script("return document.querySelector('#hooks').hidden;") as? Bool == true, "run 1 fired no hook")

            try browser.open("http://\(dashboard.hostPort)/runs/2")
            #expect(try browser.wait(until: "document.querySelector('#hooks li')"))
            let hooks = try browser.text("#hooks")
            #expect(hooks.hasPrefix("failure → page run 3, "), "\(hooks)")
            #expect(try browser.script("return document.querySelector('#hooks a').getAttribute('href');") as? String == "/runs/3")
        }
    }
}
