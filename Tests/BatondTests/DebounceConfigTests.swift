@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: debounce and maxWait")
struct DebounceConfigTests {
    @Test("debounce and maxWait are durations on an action; maxWait defaults to ten windows; neither is set by default")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: { ci: { exec: ["true"], debounce: "5s" }, capped: { exec: ["true"], debounce: "5s", maxWait: "20s" },
                         plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        let ci = try #require(config.actions.first { $0.name == "ci" })
        #expect(ci.debounce == .seconds(5) && ci.maxWait == nil && ci.debounceMaxWait == .seconds(50))
        let capped = try #require(config.actions.first { $0.name == "capped" })
        #expect(capped.debounceMaxWait == .seconds(20))
        let plain = try #require(config.actions.first { $0.name == "plain" })
        #expect(plain.debounce == nil && plain.debounceMaxWait == nil)
    }

    @Test("a bad debounce or maxWait is refused naming its field and what was wrong",
          arguments: [
              (#"debounce: "soon""#, #"actions.d.debounce: expected a duration such as "30s", "5m" or "1h30m", got "soon""#),
              (#"debounce: "0s""#, "actions.d.debounce: must be more than 0 (leave it out for no limit)"),
              (#"maxWait: "1m""#, "actions.d.maxWait: needs debounce: it caps how long a debounced run waits after the first trigger of its burst"),
              (#"debounce: "10s", maxWait: "5s""#, "actions.d.maxWait: must be at least debounce (10s), got 5.0s"),
              (#"debounce: "10s", maxWait: 0"#, "actions.d.maxWait: must be more than 0 (leave it out for no limit)"),
          ])
    func refused(fields: String, problem: String) {
        #expect(problems(#"{ actions: { d: { exec: ["true"], "# + fields + " } } }") == [problem])
    }

    @Test("a debounce in a fleet config is taken (the fleet decides it exactly: the pending run's window is in its row)")
    func fleet() {
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], debounce: "5s", maxWait: "1m" } } }"#) == [])
    }
}
