import BatonCore
import Foundation
import Testing

/// Issue 42, item 2, in a real browser: the search box finds the runs whose output holds a text,
/// newest first, with their numbered lines, the text marked, and hostile output as text.
@Suite("End to end: search in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardSearchBrowserTests {
    @Test("the search box lists the matching runs, newest first, lines numbered and the text marked; the history's filters apply")
    func searchBox() async throws {
        let daemon = try Daemon(config: #"""
            { search: "index", actions: {
                fetch: { exec: ["sh", "-c", "echo starting; echo '<img src=x onerror=window.pwned=1> Connection refused'; exit 3"] },
                quiet: { exec: ["sh", "-c", "echo all fine"] } } }
            """#)
        defer { daemon.stop() }
        for action in ["fetch", "quiet", "fetch"] { _ = try daemon.baton("run", action) }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').dataset.state === 'live'"))
            try browser.type("#search-text", "connection REFUSED")
            try browser.click("#search button[type=submit]")
            // The answer first (the note leaves "Searching…"), given a minute: one run of the whole suite at
            // load 20 (helpers' builds beside it) saw the 20 s default pass; then what it showed, named.
            let answered = try browser.wait(until: "!document.querySelector('#search-note').textContent.startsWith('Searching')", seconds: 60)
            let shown = try browser.script("return document.querySelector('#search-note').textContent + ' (' + document.querySelectorAll('#search-results li').length + ' listed)';") as? String
            #expect(answered && shown == "2 runs, newest first. (2 listed)", "the search showed \(shown ?? "nothing")")
            let runs = try browser.script("return [...document.querySelectorAll('#search-results li')].map((li) => li.dataset.run);") as? [String]
            #expect(runs == ["3", "1"])
            #expect(try browser.text("#search-results li .search-lines") == "2: <img src=x onerror=window.pwned=1> Connection refused\n")
            #expect(try browser.text("#search-results li mark") == "Connection refused")
            #expect(try browser.script("return document.querySelectorAll('#search-results img').length + (window.pwned === undefined ? 0 : 100);") as? Int == 0)
            _ = try browser.script("document.querySelector('#search').scrollIntoView();")
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-search.png")
            // The history's action filter narrows the search too.
            _ = try browser.script("document.querySelector('#filter-action').value = 'quiet';")
            try browser.click("#search button[type=submit]")
            #expect(try browser.wait(until: "document.querySelector('#search-note').textContent === \"No run's output holds it.\""))
        }
    }
}
