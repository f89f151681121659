@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: approve")
struct ApprovalsConfigTests {
    @Test("approve: by groups and users of this machine (resolved), a timeout, self false unless said")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: {
                deploy: { exec: ["true"], approve: { by: ["group:nogroup", "user:nobody", "user:0"], timeout: "1h" } },
                chat: { exec: ["true"] },
                mine: { exec: ["true"], approve: { by: ["group:nogroup"], self: true }, on: { awaiting: "chat" } } } }
            """#.utf8), file: "t.json5")
        let deploy = try #require(config.actions.first { $0.name == "deploy" }?.approve)
        #expect(deploy.by == ["group:nogroup", "user:nobody", "user:0"])
        #expect(deploy.approvers == AccessRule(users: [65534, 0], groups: [65534]))
        #expect(deploy.timeout == .seconds(3_600) && !deploy.allowsSelf)
        let mine = try #require(config.actions.first { $0.name == "mine" }?.approve)
        #expect(mine.timeout == nil && mine.allowsSelf)
        #expect(config.actions.first { $0.name == "mine" }?.hooks.targets[.awaiting]?.action.name == "chat")
    }

    @Test("a bad approve names the action, the field and what is wrong; a fleet config takes approve, not its awaiting hook", arguments: [
        (#"{ actions: { d: { exec: ["true"], approve: { by: ["group:no-such-group-here"] } } } }"#,
         ["actions.d.approve.by[0]: no group named \"no-such-group-here\""]),
        (#"{ actions: { d: { exec: ["true"], approve: { by: ["user:no-such-user-here"] } } } }"#,
         ["actions.d.approve.by[0]: no user named \"no-such-user-here\""]),
        (#"{ actions: { d: { exec: ["true"], approve: { by: ["ops"] } } } }"#,
         ["actions.d.approve.by[0]: expected \"group:NAME\" or \"user:NAME\", got \"ops\""]),
        (#"{ actions: { d: { exec: ["true"], approve: { by: [] } } } }"#,
         ["actions.d.approve.by: expected at least one \"group:NAME\" or \"user:NAME\""]),
        (#"{ actions: { d: { exec: ["true"], approve: { timeout: "1h" } } } }"#,
         ["actions.d.approve.by: missing: who may approve, such as [\"group:ops\", \"user:alice\"]"]),
        (#"{ actions: { d: { exec: ["true"], approve: { by: ["user:0"], self: "no" } } } }"#,
         ["actions.d.approve.self: expected true or false, got a string"]),
        (#"{ actions: { chat: { exec: ["true"] }, d: { exec: ["true"], on: { awaiting: "chat" } } } }"#,
         ["actions.d.on.awaiting: fires when a run waits for approval, and d has no approve"]),
        (#"{ postgres: "dbname=x", actions: { chat: { exec: ["true"] }, d: { exec: ["true"], approve: { by: ["user:0"] }, on: { awaiting: "chat" } } } }"#,
         []),
        (#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], approve: { by: ["user:0"], timeout: "1h" } } } }"#, []),
        // Review item 4: the group principals' uid is no one's to name.
        (#"{ actions: { d: { exec: ["true"], approve: { by: ["user:4294967294"] } } } }"#,
         ["actions.d.approve.by[0]: \"4294967294\" is uid 4294967294, the uid the team's dashboard serves group principals as: no rule may name it (name their group instead)"]),
        (#"{ actions: { d: { exec: ["true"], allow: { trigger: { users: ["4294967294"] } } } } }"#,
         ["actions.d.allow.trigger.users: \"4294967294\" is uid 4294967294, the uid the team's dashboard serves group principals as: no rule may name it (name their group instead)"]),
    ])
    func refused(text: String, expected: [String]) {
        #expect(problems(text) == expected)
    }
}
