@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: secret params")
struct SecretParamConfigTests {
    @Test("secret: true marks a param; it is off by default, and part of the action's fingerprint")
    func parsed() throws {
        let config = try Config.parse(Data(#"{ actions: { d: { exec: ["true"], params: { token: { secret: true, pattern: "^[a-z]+$" }, env: {} } } } }"#.utf8),
                                      file: "t.json5")
        let action = try #require(config.actions.first)
        #expect(action.params["token"]?.secret == true && action.params["env"]?.secret == false)
        #expect(action.secretParams == ["token"])
        var plain = action
        plain.params["token"]?.secret = false
        #expect(plain.fingerprint != action.fingerprint)
    }

    @Test("a secret with a default, a secret that is not a boolean, and secrets on a fleet are refused naming the field")
    func refused() {
        #expect(problems(#"{ actions: { d: { exec: ["true"], params: { token: { secret: true, default: "x" } } } } }"#)
            == ["actions.d.params.token.default: a secret param has no default (the config keeps it in clear): "
                + "pass it with each trigger, or put a fixed value in the action's env"])
        #expect(problems(#"{ actions: { d: { exec: ["true"], params: { token: { secret: "yes" } } } } }"#)
            == ["actions.d.params.token.secret: expected true or false, got a string"])
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], params: { token: { secret: true } } } } }"#)
            == ["actions.d.params.token.secret: secret params are not supported on a fleet yet (a run may start on a host that never saw the value)"])
        #expect(problems(#"{ actions: { d: { exec: ["true"], params: { token: { secret: false, default: "x" } } } } }"#) == [])
    }

    @Test("a webhook that fills a secret param does not quote its value when it does not match: the hook keeps no pattern for it")
    func webhookPattern() throws {
        let secrets = try WebhookConfigTests.Secrets()
        let config = try Config.parse(Data(#"""
            { webhooks: { listen: "127.0.0.1:0", hooks: { h: { action: "d", signature: "github", secret: { file: "\#(secrets.directory)/gh.secret" }, params: { token: "/t", env: "/e" } } } },
              actions: { d: { exec: ["true"], params: { token: { secret: true, pattern: "^[a-z]+$" }, env: { pattern: "^[a-z]+$" } } } } }
            """#.utf8), file: "t.json5")
        let hook = try #require(config.webhooks?.hooks.first?.value)
        #expect(hook.rules.patterns.keys.sorted() == ["env"])
    }
}
