@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: hooks (on)")
struct HookConfigTests {
    static let hooked = #"""
        { actions: {
            deploy: { exec: ["true"], on: { failure: "page", success: "ping", change: "flip" } },
            page: { exec: ["true"], policy: "queue", params: { channel: { default: "ops" } }, keyParams: ["channel"],
                    on: { failure: "escalate", chain: true } },
            ping: { exec: ["true"] }, flip: { exec: ["true"] }, escalate: { exec: ["true"] },
        } }
        """#

    @Test("on names an action per outcome, resolved with its defaults and key, chained targets with their own hooks")
    func parsed() throws {
        let config = try Config.parse(Data(Self.hooked.utf8), file: "t.json5")
        let deploy = try #require(config.actions.first { $0.name == "deploy" })
        #expect(deploy.hooks.targets.mapValues(\.action.name) == [.failure: "page", .success: "ping", .change: "flip"])
        #expect(!deploy.hooks.chain)
        let page = try #require(deploy.hooks.targets[.failure])
        #expect(page.params == ["channel": "ops"] && page.key == "page channel=ops" && page.action.policy == .queue)
        #expect(page.action.hooks.chain && page.action.hooks.targets[.failure]?.action.name == "escalate")
        #expect(config.actions.first { $0.name == "ping" }?.hooks.isEmpty == true)
    }

    @Test("an unknown action, a target with a required param and a bad field are refused, naming them")
    func refused() {
        #expect(problems(#"{ actions: { d: { exec: ["true"], on: { failure: "pager" } }, page: { exec: ["true"] } } }"#)
            == [#"actions.d.on.failure: names no configured action: "pager"; did you mean "page"? (actions: d, page)"#])
        #expect(problems(#"{ actions: { d: { exec: ["true"], on: { success: "p" } }, p: { exec: ["true"], params: { to: {} } } } }"#)
            == ["actions.d.on.success: names p, whose param to has no default: a hook run gets only its action's param defaults (the firing run's params are in BATON_HOOK_PARAM_*)"])
        #expect(problems(#"{ actions: { d: { exec: ["true"], on: { fail: "d2" } }, d2: { exec: ["true"] } } }"#).first?.hasPrefix("actions.d.on.fail:") == true)
        #expect(problems(#"{ actions: { d: { exec: ["true"], on: { failure: 3 } } } }"#).first?.hasPrefix("actions.d.on.failure:") == true)
        #expect(problems(#"{ actions: { d: { exec: ["true"], on: { chain: "yes" } } } }"#) == ["actions.d.on.chain: expected true or false, got a string"])
    }

    @Test("cycles are refused at load, each named once from its first action")
    func cycles() {
        #expect(problems(#"{ actions: { a: { exec: ["true"], on: { failure: "a" } } } }"#) == ["actions.a.on: hooks make a cycle: a → a"])
        #expect(problems(#"""
            { actions: { a: { exec: ["true"], on: { failure: "b" } }, b: { exec: ["true"], on: { success: "c" } },
                         c: { exec: ["true"], on: { change: "a", failure: "d" } }, d: { exec: ["true"], on: { failure: "d2" } },
                         d2: { exec: ["true"], on: { success: "d" } } } }
            """#) == ["actions.a.on: hooks make a cycle: a → b → c → a", "actions.d.on: hooks make a cycle: d → d2 → d"])
        #expect(problems(#"{ actions: { a: { exec: ["true"], on: { failure: "b", success: "b" } }, b: { exec: ["true"] } } }"#) == [])
    }

    @Test("hooks in a fleet config load (the end's transaction decides them, FleetHooks), locks beside them too (FleetLocks)")
    func fleet() {
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], on: { failure: "p", change: "p" } }, p: { exec: ["true"] } } }"#)
            == [])
        #expect(problems(#"{ postgres: "dbname=x", actions: { d: { exec: ["true"], on: { failure: "p" }, locks: ["db"] }, p: { exec: ["true"] } } }"#)
            == [])
    }
}
