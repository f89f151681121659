@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: rateLimit")
struct RateLimitConfigTests {
    @Test("rateLimit: runs and per, scope key and over reject by default; scope action and over delay when given; none by default")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: { deploy: { exec: ["true"], rateLimit: { runs: 10, per: "1h" } },
                         sync: { exec: ["true"], rateLimit: { runs: 1, per: 30, scope: "action", over: "delay" } },
                         plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        let deploy = try #require(config.actions.first { $0.name == "deploy" })
        #expect(deploy.rateLimit == RateLimit(runs: 10, per: .seconds(3_600), scope: .key, over: .reject))
        let sync = try #require(config.actions.first { $0.name == "sync" })
        #expect(sync.rateLimit == RateLimit(runs: 1, per: .seconds(30), scope: .action, over: .delay))
        #expect(config.actions.first { $0.name == "plain" }?.rateLimit == nil)
        #expect(deploy.fingerprint != Action(name: "deploy", exec: ["true"]).fingerprint, "the limit is part of the definition")
    }

    @Test("a bad rateLimit names the action and the field; a fleet config takes one; retention must keep what it counts",
          arguments: [
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 0, per: "1h" } } } }"#,
               ["actions.d.rateLimit.runs: expected a whole number from 1 to 100000, got 0"]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 2, per: "500ms" } } } }"#,
               ["actions.d.rateLimit.per: must be from 1s to 366d, got 500ms"]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 2, per: "400d" } } } }"#,
               ["actions.d.rateLimit.per: must be from 1s to 366d, got 400d00h"]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { per: "1h" } } } }"#,
               ["actions.d.rateLimit.runs: missing: how many runs may start per window, such as runs: 10"]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 3 } } } }"#,
               ["actions.d.rateLimit.per: missing: the window the runs are counted over, such as per: \"1h\""]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 3, per: "1h", scope: "host" } } } }"#,
               ["actions.d.rateLimit.scope: expected one of key, action, got \"host\""]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 3, per: "1h", over: "queue" } } } }"#,
               ["actions.d.rateLimit.over: expected one of reject, delay, got \"queue\""]),
              (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], rateLimit: { runs: 3, per: "1h" } } } }"#, []),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 3, per: "180d" } } } }"#,
               ["actions.d.rateLimit.per: counts starts over 180d00h, but retention removes ended runs after 90d00h: keep them at least as long (retention: { maxAge, keepFailures })"]),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 3, per: "180d" }, retention: { maxAge: "200d" } } } }"#, []),
              (#"{ actions: { d: { exec: ["true"], rateLimit: { runs: 20000, per: "1d" } } } }"#,
               ["actions.d.rateLimit.runs: counts 20000 starts, but retention keeps 10000 runs of the action: keep at least as many (retention: { maxRunsPerAction })"]),
              (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], rateLimit: { runs: 0, per: "1h" } } } }"#,
               ["actions.d.rateLimit.runs: expected a whole number from 1 to 100000, got 0"]),
          ])
    func refused(text: String, expected: [String]) {
        #expect(problems(text) == expected)
    }
}
