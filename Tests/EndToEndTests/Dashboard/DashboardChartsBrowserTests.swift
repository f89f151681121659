import BatonCore
import Foundation
import Testing

/// Issue 42, item 1, in a real browser: an action's page charts each run's duration coloured by
/// its outcome, the success rate per day and each run's CPU and memory, with Debian's Chart.js;
/// each card has a small chart of its recent runs.
@Suite("End to end: charts in a browser", .serialized,
       .enabled(if: WebDriver.available && FileManager.default.fileExists(atPath: "/usr/share/javascript/chart.js/chart.min.js"),
                "needs chromium, chromium-driver and libjs-chart.js"), .offPool)
struct DashboardChartsBrowserTests {
    /// Five runs of `flip`: success, failure, success, success, failure.
    static let codes = [0, 1, 0, 0, 1]
    static let green = "#1b7f3b", red = "#c0392b"
    static let colours = codes.map { $0 == 0 ? green : red }

    static func daemon() throws -> Daemon {
        let daemon = try Daemon(config: #"""
            { actions: { flip: { exec: ["sh", "-c", "exit $BATON_PARAM_CODE"], params: { code: { pattern: "^[0-9]$" } } },
                         idle: { exec: ["true"] } } }
            """#)
        for code in codes { _ = try daemon.baton("run", "flip", "-p", "code=\(code)") }
        return daemon
    }

    /// The chart's dataset `index`: how many values, and the bar colours.
    static func dataset(_ browser: WebDriver, _ canvas: String, _ index: Int = 0) throws -> (count: Int, colours: [String]) {
        let count = try browser.script("return window.Chart.getChart(arguments[0]).data.datasets[\(index)].data.length;", [canvas]) as? Int ?? -1
        let colours = try browser.script("""
            const c = window.Chart.getChart(arguments[0]).data.datasets[\(index)].backgroundColor;
            return Array.isArray(c) ? c : [c];
            """, [canvas]) as? [String] ?? []
        return (count, colours)
    }

    @Test("an action's page: five bars in their outcomes' colours with p50 and p95, one day at 60%, CPU and memory per run")
    func actionPage() async throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "document.querySelector('#connection').dataset.state === 'live'"))
            try browser.click("[data-action='flip'] h2 a")
            #expect(try browser.wait(until: "location.pathname === '/actions/flip' && !!window.Chart && !!window.Chart.getChart('chart-usage')"))
            let durations = try Self.dataset(browser, "chart-durations")
            #expect(durations.count == 5 && durations.colours == Self.colours, "\(durations)")
            let lines = try browser.script("return window.Chart.getChart('chart-durations').data.datasets.map((d) => d.label);") as? [String]
            #expect(lines == ["duration (s)", "p50", "p95"])
            let daily = try browser.script("return window.Chart.getChart('chart-daily').data.datasets[0].data;") as? [Int]
            #expect(daily == [60])
            #expect(try Self.dataset(browser, "chart-usage", 0).count == 5)
            #expect(try Self.dataset(browser, "chart-usage", 1).count == 5)
            #expect(try browser.text("#action-facts").contains("3 succeeded, 2 failed, 0 cancelled"))
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-action-charts.png")
            // A sixth run redraws the page's charts.
            _ = try daemon.baton("run", "flip", "-p", "code=0")
            #expect(try browser.wait(until: "window.Chart.getChart('chart-durations').data.datasets[0].data.length === 6"))
        }
    }

    @Test("each card's small chart: one bar per recent run in its outcome's colour; an action with no run has none")
    func cards() async throws {
        let daemon = try Self.daemon()
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            #expect(try browser.wait(until: "!!document.querySelector(\"[data-action='flip'] canvas.card-chart\")"))
            #expect(try browser.wait(until: "!!window.Chart.getChart(document.querySelector(\"[data-action='flip'] canvas.card-chart\"))"))
            let canvas = "document.querySelector(\"[data-action='flip'] canvas.card-chart\")"
            let colours = try browser.script("return window.Chart.getChart(\(canvas)).data.datasets[0].backgroundColor;") as? [String]
            #expect(colours == Self.colours)
            #expect(try browser.script("return document.querySelectorAll(\"[data-action='idle'] canvas\").length;") as? Int == 0)
            try browser.screenshot(to: DashboardBrowserTests.screenshots + "/dashboard-card-charts.png")
        }
    }
}
