@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: pause right and pauseAfterFailures")
struct PauseConfigTests {
    @Test("allow: { pause } at the top and on an action; pauseAfterFailures on an action; none by default")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { allow: { pause: { users: ["*"] } },
              actions: { deploy: { exec: ["true"], pauseAfterFailures: 3, allow: { pause: { users: ["root"] } } }, plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        #expect(config.access.pause.everyone)
        let deploy = try #require(config.actions.first { $0.name == "deploy" })
        #expect(deploy.pauseAfterFailures == 3 && deploy.allow?.pause?.users == [0])
        #expect(config.actions.first { $0.name == "plain" }?.pauseAfterFailures == nil)
        #expect(AccessPolicy().rule(.pause, for: nil) == .nobody, "by default only root and batond's own user pause")
    }

    @Test("a bad pauseAfterFailures is refused, and a fleet config refuses it (pauses are one machine's for now)",
          arguments: [
              (#"{ actions: { d: { exec: ["true"], pauseAfterFailures: 0 } } }"#,
               "actions.d.pauseAfterFailures: expected a whole number from 1 to 1000, got 0"),
              (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], pauseAfterFailures: 2 } } }"#,
               "actions.d.pauseAfterFailures: pauses are one machine's for now: a fleet cannot pause an action"),
          ])
    func refused(text: String, problem: String) {
        #expect(problems(text) == [problem])
    }
}
