import BatonCore
import Foundation
import Testing

/// The dashboard's button says what a press would do to the run of its key: with escaped keys
/// (issue 21, item 3) the page must find that run by its params, not by a key it writes itself.
@Suite("End to end: the dashboard and single-flight keys", .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardKeyTests {
    @Test("reject: the button is disabled for the params of the run in flight, not for others that print alike")
    func buttonFollowsKey() async throws {
        let daemon = try Daemon(config: """
            { shutdownGrace: "0s", actions: { kp: { exec: ["sleep", "60"], policy: "reject", params: { a: {}, b: {} }, keyParams: ["a", "b"] } } }
            """)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "kp", "-p", "a=x b=y", "-p", "b=z", "--detach").stdout == "1\n")
        try await onThread {
            let browser = try WebDriver()
            defer { browser.quit() }
            try browser.open(dashboard.url)
            let card = "document.querySelector('.card[data-action=\"kp\"]')"
            let button = "\(card).querySelector('.press-button')"
            #expect(try browser.wait(until: "\(card).querySelector('.flight')"), "the page knows run 1 is in flight")
            try browser.type("#param-kp-a", "x")
            try browser.type("#param-kp-b", "y b=z")
            #expect(try browser.wait(until: "\(button).textContent === 'Run kp' && !\(button).disabled"),
                    "another key: a press would start a run")
            try browser.type("#param-kp-a", "x b=y")
            try browser.type("#param-kp-b", "z")
            #expect(try browser.wait(until: "\(button).disabled && \(button).textContent === 'Loading… (run 1)'"),
                    "run 1's key: a press would be refused")
            #expect(try browser.text(".card[data-action=\"kp\"] .flight-text").contains("a=x%20b%3Dy b=z"), "the key as batond has it")
        }
    }
}
