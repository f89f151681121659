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

    @Test("a bad pauseAfterFailures is refused, in a fleet too; a fleet config takes a good one (counted over every host's runs)",
          arguments: [
              (#"{ actions: { d: { exec: ["true"], pauseAfterFailures: 0 } } }"#,
               ["actions.d.pauseAfterFailures: expected a whole number from 1 to 1000, got 0"]),
              (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], pauseAfterFailures: 1001 } } }"#,
               ["actions.d.pauseAfterFailures: expected a whole number from 1 to 1000, got 1001"]),
              (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], pauseAfterFailures: 2 } } }"#, []),
          ])
    func refused(text: String, problems expected: [String]) {
        #expect(problems(text) == expected)
    }
}
