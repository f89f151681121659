import BatonCore
import BatonIPC
import Foundation
import Testing

/// A run's page lists the runs it needs as links with their phases, moved live (needs, issue 40 item 2).
@Suite("End to end: needs on the dashboard in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardNeedsBrowserTests {
    @Test("c waits for a: its page says so, links a run 2 with its phase, and shows it succeed and c run, live; a's page links back")
    func runPage() async throws {
        let gate = NSTemporaryDirectory() + "baton-needs-gate-" + UUID().uuidString
        let daemon = try Daemon(config: """
            {
              actions: {
                a: { exec: ["sh", "-c", "while [ ! -e \\"$GATE\\" ]; do sleep 0.02; done"], env: { GATE: "\(gate)" } },
                c: { exec: ["true"], needs: ["a"] },
              },
            }
            """)
        defer { daemon.stop() }
        defer { unlink(gate) }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "c", "--detach").code == 0)
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').dataset.state === 'live'"), "signed in")
            try browser.open("http://\(dashboard.hostPort)/runs/1")
            #expect(try browser.wait(until: "document.querySelector('#needs li')"))
            #expect(try browser.text("#needs-waiting") == "waiting for a run 2")
            #expect(try browser.script("return document.querySelector('#needs a').getAttribute('href');") as? String == "/runs/2")
            #expect(try browser.wait(until: "document.querySelector('#needs .phase').textContent === 'loading'"))
            // The graph: a's box (a link, outlined as loading) with an arrow into c's.
            #expect(try browser.script("return document.querySelectorAll('#needs-graph g.node').length;") as? Int == 2)
            #expect(try browser.script("return document.querySelectorAll('#needs-graph path.edge').length;") as? Int == 1)
            #expect(try browser.script("return document.querySelector('#needs-graph a').getAttribute('href');") as? String == "/runs/2")
            #expect(try browser.wait(until: "document.querySelector('#needs-graph g.node[data-run=\"2\"]').dataset.phase === 'loading'"))
            FileManager.default.createFile(atPath: gate, contents: nil)
            #expect(try browser.wait(until: "document.querySelector('#needs .phase').textContent === 'success'"), "the needed run's phase moves live")
            #expect(try browser.wait(until: "document.querySelector('#needs-graph g.node[data-run=\"2\"]').dataset.phase === 'success'"), "and its box's")
            #expect(try browser.wait(until: "document.querySelector('#run-state').textContent.includes('succeeded')"), "c ran after a")
            #expect(try browser.script("return document.querySelector('#needs-waiting').hidden;") as? Bool == true)
            try browser.open("http://\(dashboard.hostPort)/runs/2")
            #expect(try browser.wait(until: "document.querySelector('#needed-by li')"))
            let neededBy = try browser.text("#needed-by")
            #expect(neededBy.hasPrefix("c run 1"), "\(neededBy)")
        }
    }
}
