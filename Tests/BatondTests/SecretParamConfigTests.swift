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

    @Test("a secret with a default, a secret that is not a boolean, and secrets on a fleet without secretsKey are refused naming the field; secretsKey is an absolute path")
    func refused() {
        #expect(problems(#"{ actions: { d: { exec: ["true"], params: { token: { secret: true, default: "x" } } } } }"#)
            == ["actions.d.params.token.default: a secret param has no default (the config keeps it in clear): "
                + "pass it with each trigger, or put a fixed value in the action's env"])
        #expect(problems(#"{ actions: { d: { exec: ["true"], params: { token: { secret: "yes" } } } } }"#)
            == ["actions.d.params.token.secret: expected true or false, got a string"])
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], params: { token: { secret: true } } } } }"#)
            == ["secretsKey: missing: actions.d has a secret param, and a fleet's hosts must hash secrets under one key: "
                + "secretsKey: \"/etc/baton/secrets.key\" naming a file of 32 random bytes, mode 0600, the same on every host "
                + "(head -c 32 /dev/urandom > /etc/baton/secrets.key)"])
        #expect(problems(#"{ postgres: "dbname=x", secretsKey: "/etc/baton/secrets.key", actions: { d: { exec: ["true"], params: { token: { secret: true } } } } }"#)
            == [])
        #expect(problems(#"{ secretsKey: "secrets.key", actions: { d: { exec: ["true"] } } }"#)
            == ["secretsKey: expected an absolute path, got \"secrets.key\""])
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
