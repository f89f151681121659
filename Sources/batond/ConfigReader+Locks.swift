import BatonCore

/// `locks: ["db"]` on actions and `limits: { "heavy-io": 2 }` at the top: the locks between
/// actions, each action's claims given their limits once every action is read.
extension ConfigReader {
    /// The most runs one lock's `limits` may let hold it at once.
    static let maxLockLimit = 10_000

    /// An action's `locks`: names, each at most once (their limits are filled in by `lockLimits`).
    mutating func locks(_ value: JSONValue, at: String) -> [LockClaim] {
        guard let names = stringArray(value, at: at) else { return [] }
        var claims: [LockClaim] = []
        for (index, name) in names.enumerated() {
            if !Self.isValidName(name) {
                fail("\(at)[\(index)]", "\(Action.quoted(name)) is not a lock name: 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit")
            } else if claims.contains(where: { $0.name == name }) {
                fail("\(at)[\(index)]", "lock \(Action.quoted(name)) is listed twice")
            } else {
                claims.append(LockClaim(name))
            }
        }
        return claims
    }

    /// The top-level `limits`: how many runs may hold each lock at once, for locks some action
    /// holds; sets each claim's limit (1 for a lock it does not name).
    mutating func lockLimits(_ value: JSONValue?, actions: inout [Action]) {
        let declared = Set(actions.flatMap { $0.locks.map(\.name) })
        var limits: [String: Int] = [:]
        if let value {
            guard case let .object(fields) = value else {
                return fail("limits", "expected an object of lock names to how many runs may hold each at once, such as { \"heavy-io\": 2 }, got \(value.kind)")
            }
            for (name, limit) in fields.sorted(by: { $0.key < $1.key }) {
                guard declared.contains(name) else {
                    let known = declared.isEmpty ? "no action has locks" : "the locks: " + declared.sorted().joined(separator: ", ")
                    fail("limits.\(name)", "no action holds lock \(Action.quoted(name)) (\(known)); a limit is for a lock named in an action's locks")
                    continue
                }
                limits[name] = integer(limit, at: "limits.\(name)", min: 1, max: Self.maxLockLimit)
            }
        }
        for index in actions.indices {
            actions[index].locks = actions[index].locks.map { LockClaim($0.name, limit: limits[$0.name] ?? 1) }
        }
    }
}
