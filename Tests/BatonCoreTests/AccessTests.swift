@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Access rules")
struct AccessRuleTests {
    static let policy = AccessPolicy(trigger: AccessRule(users: [1000], groups: [50]), cancel: .nobody, read: .anyone)
    static let deploy = Action(name: "deploy", exec: ["true"])
    static let open: Action = {
        var action = Action(name: "open", exec: ["true"])
        action.allow = AccessPolicy.Override(trigger: .anyone, read: .nobody)
        return action
    }()

    @Test("who may do what", arguments: [
        // (permission, action, uid, groups, allowed)
        (Permission.trigger, "deploy", UInt32(1000), [UInt32(1000)], true),    // listed user
        (.trigger, "deploy", 1001, [1001, 50], true),                          // member of a listed group
        (.trigger, "deploy", 1001, [1001], false),                             // neither
        (.cancel, "deploy", 1000, [1000], false),                              // cancel is its own permission
        (.read, "deploy", 4242, [4242], true),                                 // read: anyone
        (.trigger, "open", 4242, [4242], true),                                // the action's own rule replaces the global one
        (.read, "open", 4242, [4242], false),
        (.cancel, "open", 1000, [1000], false),                                // not overridden: the global rule
        (.admin, "deploy", 1000, [1000, 50], false),                           // admin: root and owner only
        (.admin, "deploy", 0, [0], true),                                      // root always
        (.cancel, "open", 777, [777], true),                                   // the daemon's own user always
    ])
    func table(permission: Permission, action: String, uid: UInt32, groups: [UInt32], allowed: Bool) {
        let subject = action == "open" ? Self.open : Self.deploy
        #expect(Self.policy.allows(permission, action: subject, uid: uid, groups: groups, owner: 777) == allowed)
    }
}
