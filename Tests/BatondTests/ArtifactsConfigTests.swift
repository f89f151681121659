@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: artifacts")
struct ArtifactsConfigTests {
    @Test("artifacts: { keep } as a size or a number of bytes; none by default")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: { build: { exec: ["true"], artifacts: { keep: "100MiB" } },
                         small: { exec: ["true"], artifacts: { keep: 4096 } },
                         plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        #expect(config.actions.first { $0.name == "build" }?.artifactsKeep == 100 << 20)
        #expect(config.actions.first { $0.name == "small" }?.artifactsKeep == 4_096)
        #expect(config.actions.first { $0.name == "plain" }?.artifactsKeep == nil)
    }

    @Test("a fleet config takes artifacts: every host keeps them in PostgreSQL and serves any run's")
    func fleet() throws {
        let config = try Config.parse(Data(#"""
            { postgres: "dbname=x", actions: { d: { exec: ["true"], artifacts: { keep: "1MiB" } } } }
            """#.utf8), file: "t.json5")
        #expect(config.actions.first?.artifactsKeep == 1 << 20)
    }

    @Test("a bad artifacts names the action and the field",
          arguments: [
              (#"{ actions: { d: { exec: ["true"], artifacts: { keep: "lots" } } } }"#,
               [#"actions.d.artifacts.keep: expected a size from 1 byte to 4GiB such as "100MiB" or "512KiB", got "lots""#]),
              (#"{ actions: { d: { exec: ["true"], artifacts: { keep: "0" } } } }"#,
               [#"actions.d.artifacts.keep: expected a size from 1 byte to 4GiB such as "100MiB" or "512KiB", got "0""#]),
              (#"{ actions: { d: { exec: ["true"], artifacts: { keep: "5GiB" } } } }"#,
               [#"actions.d.artifacts.keep: expected a size from 1 byte to 4GiB such as "100MiB" or "512KiB", got "5GiB""#]),
              (#"{ actions: { d: { exec: ["true"], artifacts: { keep: -3 } } } }"#,
               [#"actions.d.artifacts.keep: expected a size from 1 byte to 4GiB such as "100MiB" or "512KiB", got -3"#]),
              (#"{ actions: { d: { exec: ["true"], artifacts: {} } } }"#,
               [#"actions.d.artifacts.keep: missing: how many bytes of files a run may keep, such as "100MiB""#]),
              (#"{ actions: { d: { exec: ["true"], artifacts: { keep: "1MiB", path: "/x" } } } }"#,
               ["actions.d.artifacts.path: unknown field (known: keep)"]),
          ])
    func refused(text: String, expected: [String]) {
        #expect(problems(text) == expected)
    }
}
