import BatonCore
@testable import BatonEngine
@testable import BatonWire
import Testing

/// `Action`, `Trigger` and `Request` as one reference to their fields (a new storage per change,
/// issue 39): still values, a copy shared until one side changes, `==` comparing the fields, and
/// reflected as the structs they replaced were.
@Suite("Action, Trigger, Request: one reference, a new storage per change")
struct ActionStorageTests {
    static let action = Action(name: "deploy", exec: ["/bin/true"], env: ["A": "1"], timeout: .seconds(60), params: ["env": ParamSpec()],
                               keyParams: ["env"])
    static let trigger = Trigger(action: action, key: "deploy env=prod", policy: .queue, params: ["env": "prod"],
                                 peer: Peer(uid: 1001, gid: 1001, pid: 7))
    static let request = Request(id: .number(1), op: .trigger, action: "deploy", params: ["env": "prod"])

    struct Refused: Error {}

    /// Changes what it is given, then throws: an inout access cut short.
    static func changeThenThrow<T>(_ value: inout T, to new: T) throws {
        value = new
        throw Refused()
    }

    @Test("Action: a change to a copy leaves the original and its storage as they were")
    func actionCopy() {
        let original = Self.action
        var copy = original
        #expect(copy.storage === original.storage)
        copy.env["X"] = "1"
        copy.queueDepth = 3
        #expect(copy.storage !== original.storage)
        #expect(original == Self.action && original.env == ["A": "1"] && original.queueDepth == 1)
        #expect(copy.env == ["A": "1", "X": "1"] && copy.queueDepth == 3 && copy.name == "deploy")
    }

    @Test("Action: equal fields are equal whether shared or not; one differing field is not")
    func actionEquality() {
        var other = Action(name: "deploy", exec: ["/bin/true"], env: ["A": "1"], timeout: .seconds(60), params: ["env": ParamSpec()],
                           keyParams: ["env"])
        #expect(other == Self.action && other.storage !== Self.action.storage)
        other.tty = true
        #expect(other != Self.action)
    }

    @Test("Trigger: a copy changed leaves the original; equal fields are equal; one differing is not")
    func trigger() {
        var copy = Self.trigger
        #expect(copy.storage === Self.trigger.storage)
        copy.params["env"] = "staging"
        copy.action.env["X"] = "1"
        #expect(copy.storage !== Self.trigger.storage)
        #expect(Self.trigger.params == ["env": "prod"] && Self.trigger.action == Self.action)
        #expect(copy.params == ["env": "staging"] && copy.action.env["X"] == "1" && copy.key == "deploy env=prod")
        var other = Trigger(action: Self.action, key: "deploy env=prod", policy: .queue, params: ["env": "prod"],
                            peer: Peer(uid: 1001, gid: 1001, pid: 7))
        #expect(other == Self.trigger && other.storage !== Self.trigger.storage)
        other.neededBy = 4
        #expect(other != Self.trigger)
    }

    @Test("Request: a copy changed leaves the original; equal fields are equal; one differing is not")
    func request() {
        var copy = Self.request
        #expect(copy.storage === Self.request.storage)
        copy.params?["env"] = "staging"
        copy.detach = true
        #expect(copy.storage !== Self.request.storage)
        #expect(Self.request.params == ["env": "prod"] && Self.request.detach == nil)
        #expect(copy.params == ["env": "staging"] && copy.detach == true && copy.action == "deploy")
        var other = Request(id: .number(1), op: .trigger, action: "deploy", params: ["env": "prod"])
        #expect(other == Self.request && other.storage !== Self.request.storage)
        other.follow = false
        #expect(other != Self.request)
    }

    @Test("an inout access that throws keeps what it changed before the throw, as a stored property did")
    func throwingAccess() {
        var action = Self.action
        var trigger = Self.trigger
        var request = Self.request
        do { try Self.changeThenThrow(&action.env, to: ["B": "2"]) } catch {}
        do { try Self.changeThenThrow(&trigger.key, to: "other") } catch {}
        do { try Self.changeThenThrow(&request.action, to: "other") } catch {}
        #expect(action.env == ["B": "2"] && trigger.key == "other" && request.action == "other")
        #expect(Self.action.env == ["A": "1"] && Self.trigger.key == "deploy env=prod" && Self.request.action == "deploy")
    }

    @Test("dump shows every field, as it did for the structs")
    func reflected() {
        let action = Mirror(reflecting: Self.action).children.compactMap(\.label)
        #expect(action.prefix(4) == ["name", "exec", "cwd", "env"] && action.last == "approve")
        #expect(action.count == 37 && Set(action).count == 37)
        #expect(Mirror(reflecting: Self.trigger).children.compactMap(\.label) == [
            "action", "key", "policy", "params", "peer", "runner", "force", "slot", "via", "neededBy", "delivery", "secrets",
        ])
        #expect(Mirror(reflecting: Self.request).children.compactMap(\.label) == [
            "id", "op", "action", "params", "policy", "detach", "force", "slot", "dryRun", "run", "key", "filter", "after",
            "progress", "from", "follow", "text", "reason", "duration", "hold", "name", "actingAs", "asGroup",
        ])
    }
}
