import BatonCore

extension ConfigReader {
    /// The longest line `queue: { depth: N }` may ask for.
    static let maxQueueDepth = 1_000

    /// `queue: { depth: N }`: under the `queue` policy, up to N follow-ups of a key wait in line,
    /// first in first out, each with its own params (1, the default: one follow-up that every later
    /// trigger joins). Given without `policy`, the action's policy is `queue`; given with a policy
    /// that is not `queue` and a `policies` list without it, no trigger could queue: refused.
    mutating func queue(_ fields: [String: JSONValue], into action: inout Action, at: String) {
        guard let value = fields["queue"] else { return }
        guard let queue = object(value, at: "\(at).queue", allowed: ["depth"]) else { return }
        if let depth = queue["depth"] {
            action.queueDepth = integer(depth, at: "\(at).queue.depth", min: 1, max: Self.maxQueueDepth) ?? 1
        }
        if fields["policy"] == nil {
            action.policy = .queue
        } else if action.policy != .queue, !action.policies.contains(.queue) {
            fail("\(at).queue", "applies to the queue policy, which this action neither has (policy: \(action.policy.rawValue)) "
                + "nor lets a trigger choose (policies)")
        }
        // A debounced trigger shares the key's pending run whatever its params: in a line of
        // several, each with its own params, it would run with another trigger's.
        if action.queueDepth > 1, fields["debounce"] != nil {
            fail("\(at).queue.depth", "a line of more than one cannot be debounced (debounce: a trigger shares the pending run "
                + "whatever its params); use depth 1, or no debounce")
        }
    }
}
