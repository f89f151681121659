import BatonCore
import Testing

/// The fingerprint of an action's definition, which fleet hosts compare.
@Suite("Action.fingerprint: the same definition, the same fingerprint; another command, another")
struct ActionFingerprintTests {
    static let base = Action(name: "deploy", exec: ["/usr/local/bin/deploy", "--all"], env: ["A": "1", "B": "2"],
                             timeout: .seconds(60), policy: .join, policies: [.queue, .reject], keyParams: ["env", "region"])

    @Test("stable: pinned, so that hosts of different releases agree")
    func pinned() {
        #expect(Self.base.fingerprint == Self.base.fingerprint)
        #expect(Self.base.fingerprint.count == 16 && Self.base.fingerprint.allSatisfy(\.isHexDigit))
        #expect(Action(name: "x", exec: ["true"]).fingerprint == "38c186b617e84cb7")
        // Computed outside Swift from the encoding and FNV-1a's definition.
        #expect(Self.base.fingerprint == "ce6924e63828bf8b")
    }

    @Test("what changes neither what runs nor which runs meet is left out; the order of maps and sets does not matter")
    func normalised() {
        var same = Self.base
        same.description = "ships it"
        same.env = ["B": "2", "A": "1"]
        same.policies = [.reject, .queue]
        same.allow = AccessPolicy.Override()
        #expect(same.fingerprint == Self.base.fingerprint)
    }

    @Test("each part of the definition counts", arguments: [
        { (a: inout Action) in a.exec = ["/usr/local/bin/deploy", "--one"] },
        { (a: inout Action) in a.exec = ["/usr/local/bin/deploy --all"] },
        { (a: inout Action) in a.env["A"] = "3" },
        { (a: inout Action) in a.cwd = "/srv" },
        { (a: inout Action) in a.timeout = .seconds(61) },
        { (a: inout Action) in a.policy = .reject },
        { (a: inout Action) in a.keyParams = ["region", "env"] },
        { (a: inout Action) in a.retry = RetryPolicy(attempts: 2) },
        { (a: inout Action) in a.umask = 0o077 },
        { (a: inout Action) in a.leftovers = .keep },
        { (a: inout Action) in a.onInterrupt = .restart },
        { (a: inout Action) in a.params["env"] = ParamSpec(defaultValue: "prod") },
        { (a: inout Action) in a.tty = true },
    ] as [@Sendable (inout Action) -> Void])
    func differs(_ change: @Sendable (inout Action) -> Void) {
        var other = Self.base
        change(&other)
        #expect(other.fingerprint != Self.base.fingerprint)
    }

    static let approve = ApprovalRule(by: ["group:ops", "user:ann"], approvers: AccessRule(groups: [50]), timeout: .seconds(3_600))

    @Test("approve counts (who, how long, self), the order of its approvers does not; an action without it keeps its pinned fingerprint",
          arguments: [
              { (r: inout ApprovalRule) in r.by = ["group:ops"] },
              { (r: inout ApprovalRule) in r.timeout = .seconds(60) },
              { (r: inout ApprovalRule) in r.timeout = nil },
              { (r: inout ApprovalRule) in r.allowsSelf = true },
          ] as [@Sendable (inout ApprovalRule) -> Void])
    func approve(_ change: @Sendable (inout ApprovalRule) -> Void) {
        var gated = Self.base
        gated.approve = Self.approve
        #expect(gated.fingerprint != Self.base.fingerprint, "hosts that disagree on approve are flagged")
        var reordered = gated
        reordered.approve?.by = ["user:ann", "group:ops"]
        #expect(reordered.fingerprint == gated.fingerprint)
        var other = gated
        change(&other.approve!)
        #expect(other.fingerprint != gated.fingerprint)
        #expect(Self.base.fingerprint == "ce6924e63828bf8b")
    }

    @Test("values are length-prefixed: moving a boundary between values changes the fingerprint")
    func boundaries() {
        #expect(Action(name: "x", exec: ["ab", "c"]).fingerprint != Action(name: "x", exec: ["a", "bc"]).fingerprint)
        #expect(Action(name: "x", env: ["a": "b=c"]).fingerprint != Action(name: "x", env: ["a=b": "c"]).fingerprint)
    }
}
