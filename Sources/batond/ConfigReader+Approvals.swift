import BatonCore

extension ConfigReader {
    /// `approve: { by: ["group:ops", "user:alice"], timeout: "1h", self: false }`: each run waits
    /// for a yes from one of `by` (each a `group:` or `user:` of this machine, looked up now, as
    /// `allow` rules are: one that does not exist is refused naming it), for `timeout` from its
    /// creation (none: until decided or cancelled); `self: true` lets its trigger approve it.
    mutating func approve(_ value: JSONValue, at: String) -> ApprovalRule? {
        guard let fields = object(value, at: at, allowed: ["by", "timeout", "self"]) else { return nil }
        guard let by = fields["by"] else {
            fail("\(at).by", "missing: who may approve, such as [\"group:ops\", \"user:alice\"]")
            return nil
        }
        let names = stringArray(by, at: "\(at).by") ?? []
        if case let .array(items) = by, items.isEmpty { fail("\(at).by", "expected at least one \"group:NAME\" or \"user:NAME\"") }
        var rule = ApprovalRule(by: names, approvers: AccessRule())
        for (index, name) in names.enumerated() {
            let here = "\(at).by[\(index)]"
            if name.hasPrefix("group:"), let gid = groupID(String(name.dropFirst(6)), at: here) {
                rule.approvers.groups.insert(gid)
            } else if name.hasPrefix("user:"), let uid = userID(String(name.dropFirst(5)), at: here) {
                rule.approvers.users.insert(uid)
            } else if !name.hasPrefix("group:"), !name.hasPrefix("user:") {
                fail(here, "expected \"group:NAME\" or \"user:NAME\", got \(Action.quoted(name))")
            }
        }
        if let timeout = fields["timeout"] { rule.timeout = positiveDuration(timeout, at: "\(at).timeout") }
        if let flag = fields["self"] {
            if case let .bool(allowed) = flag { rule.allowsSelf = allowed } else { fail("\(at).self", "expected true or false, got \(flag.kind)") }
        }
        return rule
    }
}
