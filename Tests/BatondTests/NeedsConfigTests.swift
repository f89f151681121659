@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: needs")
struct NeedsConfigTests {
    @Test("needs: names, or { action, params } with literals and {param} of the needing action; resolved to the actions, chains included")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: {
                "build-a": { exec: ["true"], params: { ref: { default: "main" } }, keyParams: ["ref"] },
                "build-b": { exec: ["true"] },
                test: { exec: ["true"], needs: ["build-b"] },
                deploy: { exec: ["true"], params: { ref: {} },
                          needs: [{ action: "build-a", params: { ref: "{ref}" } }, "test"] } } }
            """#.utf8), file: "t.json5")
        let deploy = try #require(config.actions.first { $0.name == "deploy" })
        #expect(deploy.needs.map(\.action.name) == ["build-a", "test"])
        #expect(deploy.needs[0].params == ["ref": "{ref}"])
        #expect(try deploy.needs[0].params(for: ["ref": "v2"]) == ["ref": "v2"])
        #expect(deploy.needs[1].action.needs.map(\.action.name) == ["build-b"], "a needed action's own needs come with it")
        #expect(try deploy.needs[1].params(for: ["ref": "v2"]) == [:])
        #expect(config.actions.first { $0.name == "build-b" }?.needs.isEmpty == true)
    }

    @Test("a bad need names the action, the need and what is wrong; cycles name their chain, in a fleet too",
          arguments: [
              (#"{ actions: { c: { exec: ["true"], needs: ["nope"] } } }"#,
               ["actions.c.needs[0]: names no configured action: \"nope\""]),
              (#"{ actions: { a: { exec: ["true"] }, c: { exec: ["true"], needs: [{ action: "a", params: { x: "1" } }] } } }"#,
               ["actions.c.needs[0].params.x: a has no param x (it takes none)"]),
              (#"{ actions: { a: { exec: ["true"], params: { x: {} } }, c: { exec: ["true"], needs: ["a"] } } }"#,
               ["actions.c.needs[0]: names a, whose param x has no default: give it in params, such as { action: \"a\", params: { x: \"{x}\" } }"]),
              (#"{ actions: { a: { exec: ["true"], params: { x: {} }, keyParams: ["x"] }, c: { exec: ["true"], needs: [{ action: "a", params: { x: "{y}" } }] } } }"#,
               ["actions.c.needs[0].params.x: {y} is not a param of c (it takes none)"]),
              (#"{ actions: { a: { exec: ["true"], params: { x: { pattern: "[0-9]+" } }, keyParams: ["x"] }, c: { exec: ["true"], needs: [{ action: "a", params: { x: "abc" } }] } } }"#,
               ["actions.c.needs[0].params.x: \"abc\" does not match a's pattern [0-9]+"]),
              (#"{ actions: { a: { exec: ["true"], params: { x: {} }, keyParams: ["x"] }, c: { exec: ["true"], params: { t: { secret: true } }, needs: [{ action: "a", params: { x: "{t}" } }] } } }"#,
               ["actions.c.needs[0].params.x: {t} is a secret param of c: its run keeps ***, never the value"]),
              (#"{ actions: { a: { exec: ["true"], params: { ref: {} } }, c: { exec: ["true"], params: { ref: {} }, needs: [{ action: "a", params: { ref: "{ref}" } }] } } }"#,
               ["actions.c.needs[0].params.ref: ref is not one of a's keyParams (it has none): a need joins a's run of the same key "
                   + "whatever its other params, so a run with another ref would serve c; add ref to a's keyParams"]),
              (#"{ actions: { a: { exec: ["true"], params: { ref: {}, env: { default: "prod" } }, keyParams: ["env"] }, c: { exec: ["true"], needs: [{ action: "a", params: { ref: "main" } }] } } }"#,
               ["actions.c.needs[0].params.ref: ref is not one of a's keyParams (env): a need joins a's run of the same key "
                   + "whatever its other params, so a run with another ref would serve c; add ref to a's keyParams"]),
              (#"{ actions: { a: { exec: ["true"], needs: ["b"] }, b: { exec: ["true"], needs: ["a"] } } }"#,
               ["actions.a.needs: needs make a cycle: a → b → a"]),
              (#"{ actions: { a: { exec: ["true"], needs: ["b"] }, b: { exec: ["true"], needs: ["c"] }, c: { exec: ["true"], needs: ["a"] } } }"#,
               ["actions.a.needs: needs make a cycle: a → b → c → a"]),
              (#"{ actions: { a: { exec: ["true"], needs: ["a"] } } }"#,
               ["actions.a.needs: needs make a cycle: a → a"]),
              (#"{ actions: { c: { exec: ["true"], needs: "a" } } }"#,
               ["actions.c.needs: expected an array of action names or { action, params }, got a string"]),
              (#"{ postgres: "dbname=x", actions: { a: { exec: ["true"], needs: ["b"] }, b: { exec: ["true"], needs: ["a"] } } }"#,
               ["actions.a.needs: needs make a cycle: a → b → a"]),
          ])
    func refused(text: String, expected: [String]) {
        #expect(problems(text) == expected)
    }

    @Test("a fleet config takes needs: its hosts wait for each other's runs (PostgreSQL schema 21)")
    func fleet() {
        #expect(problems(#"{ postgres: "dbname=x", actions: { a: { exec: ["true"] }, c: { exec: ["true"], needs: ["a"] } } }"#) == [])
    }
}
