@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: cooldown and force")
struct CooldownConfigTests {
    @Test("cooldown is a duration and force a boolean on an action; neither is set by default")
    func parsed() throws {
        let config = try Config.parse(Data(#"{ actions: { deploy: { exec: ["true"], cooldown: "10m", force: true }, plain: { exec: ["true"] } } }"#.utf8),
                                      file: "t.json5")
        let deploy = try #require(config.actions.first { $0.name == "deploy" })
        #expect(deploy.cooldown == .seconds(600) && deploy.allowsForce)
        let plain = try #require(config.actions.first { $0.name == "plain" })
        #expect(plain.cooldown == nil && !plain.allowsForce)
    }

    @Test("a bad cooldown or force is refused naming its field; a cooldown in a fleet is taken (the fleet decides it exactly)")
    func refused() {
        #expect(problems(#"{ actions: { d: { exec: ["true"], cooldown: "0s" } } }"#) == ["actions.d.cooldown: must be more than 0 (leave it out for no limit)"])
        #expect(problems(#"{ actions: { d: { exec: ["true"], force: "yes" } } }"#) == ["actions.d.force: expected true or false, got a string"])
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], cooldown: "1m" } } }"#)
            == [])
    }
}
