@testable import batond
import BatonCore
import Foundation
import Testing

/// `survivesRestart` on an action.
@Suite("Config: survivesRestart")
struct SurviveConfigTests {
    func parse(_ text: String) throws(ConfigError) -> Config { try Config.parse(Data(text.utf8), file: "t") }

    @Test("on by default, off with false, off for a tty's action")
    func values() throws {
        let config = try parse(#"{ actions: { a: { exec: ["true"] }, b: { exec: ["true"], survivesRestart: false }, c: { exec: ["true"], tty: true } } }"#)
        #expect(config.actions.map(\.survivesRestart) == [true, false, false])
    }

    @Test("a value that is not a boolean, and true with tty, are refused naming the action", arguments: [
        #"{ actions: { deploy: { exec: ["true"], survivesRestart: "yes" } } }"#,
        #"{ actions: { deploy: { exec: ["true"], tty: true, survivesRestart: true } } }"#,
    ])
    func refused(_ text: String) throws {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.problems.contains { $0.path == "actions.deploy.survivesRestart" }, "\(error.problems)")
        }
    }
}
